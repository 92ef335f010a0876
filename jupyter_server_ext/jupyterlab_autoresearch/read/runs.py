"""One run's summary for GET runs and runs/status: its journal validated, the rest from state.json."""

from __future__ import annotations

from pathlib import Path

from ..supervise.engine_info import EngineInfo
from ..supervise.supervisor import Supervisor
from .journal import read_journal
from .run_state import load_state, run_activity
from .workspaces import STATE_DIR, api_path, engine_log_path, journal_path, log_path


def newest_flight(state: dict) -> dict | None:
    """The experiment in flight started last (the highest number; with workers, the others are in in_flight)."""
    flights = state["in_flight"]
    return max(flights, key=lambda f: f["n"]) if flights else None


def flight_log(ws: Path, tag: str, flight: dict) -> Path:
    """The log being written for an experiment in flight: its current run's (the next after those journaled)."""
    return log_path(ws, tag, flight["n"], flight["runs"] + 1)


def run_status(sup: Supervisor, ws: Path, tag: str, engine: EngineInfo | None) -> dict:
    """The summary of one run, with its state ("awaiting-review" while its live engine waits for a
    reviewer), engine (the workspace's live one, if any) and the experiments in flight.

    Raises JournalError for a damaged journal (the server refuses to serve any of it) and
    StateUnreadable when state.json cannot be had. Blocking: call it in a thread.
    """
    read_journal(journal_path(ws, tag), ws / STATE_DIR)
    mine = engine is not None and engine.tag == tag
    state = load_state(ws, tag, mine)
    # Only a run's engine (not a transfer study of it) makes the run running, or awaiting its reviewer.
    activity = run_activity(state, live=engine is not None and engine.runs(tag))
    run = state["run"] or {}
    flight = newest_flight(state)
    engine_log = engine_log_path(ws, tag)

    def flight_json(f: dict, worker: bool) -> dict:
        out = {"n": f["n"], "description": f.get("description"), "ts": f.get("ts")}
        if worker:
            out["worker"] = f.get("worker")
        return {**out, "log": api_path(sup.root, flight_log(ws, tag, f))}

    return {
        "tag": tag,
        "state": activity,
        "pid": engine.pid if mine else None,
        "engine_started": engine.started if mine else None,
        "stopping": mine and sup.stopping(ws),
        "resumable": not mine and state["records"] > 0,
        "in_flight": flight_json(flight, False) if flight is not None else None,
        # With several workers: what each one is running (worker None with one).
        "in_flight_all": [flight_json(f, True) for f in state["in_flight"]],
        "engine_log": api_path(sup.root, engine_log) if engine_log.exists() else None,
        # Whether the last training run was sandboxed ("on"/"off"), as the run guard found it; None before one.
        "sandbox": state.get("sandbox"),
        "branch": run.get("branch"),
        "proposer": run.get("proposer"),
        "metric": run.get("metric"),
        "direction": run.get("direction"),
        "budget_s": run.get("budget_s"),
        "workers": run.get("workers", 1),
        "started": run.get("started"),
        "updated": state.get("updated"),
        "experiments": state["experiments"],
        "counts": state["counts"],
        # The engine's estimate of the best (its mean over all runs of that code), not a single draw.
        "best": (
            {"n": state["best"]["n"], "metric": state["best"]["metric"], "commit": state["best"].get("commit")}
            if state["best"]
            else None
        ),
        "baseline": state["baseline"]["metric"] if state["baseline"] else None,
        "cost_usd": state.get("cost_usd"),
        "tokens": state.get("tokens", 0),
        "end": state.get("end"),
        # Step mode: the proposal awaiting review ({n, description, since}; a stopped run's is offered
        # again on --resume), and whether step mode is on now.
        "pending": state.get("pending"),
        "step": state.get("step", False),
        # What a client has seen so far, for the event stream's `since`.
        "records": state["records"],
    }
