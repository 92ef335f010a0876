"""A run's state (running, stopped, died) derived from its journal and the live engine, if any."""

from __future__ import annotations

from pathlib import Path

from .engine_info import EngineInfo
from .journal import in_flight, in_flight_all, read_journal, run_counts, summarize
from .supervisor import Supervisor
from .workspaces import STATE_DIR, api_path, engine_log_path, journal_path, log_path


def state_of(last_type: str | None, engine: EngineInfo | None, tag: str) -> str:
    """running when the live engine works on this tag; else stopped after a run_end, else died."""
    if engine is not None and engine.tag == tag:
        return "running"
    if last_type == "run_end":
        return "stopped"
    # No run_end and no engine: it was killed or crashed; --resume picks it up.
    return "died"


def run_status(sup: Supervisor, ws: Path, tag: str, records: list[dict] | None = None) -> dict:
    """The summary of one run, with its state, engine and the experiment in flight."""
    if records is None:
        records = read_journal(journal_path(ws, tag), ws / STATE_DIR)
    engine = sup.engine(ws)
    state = state_of(records[-1]["type"] if records else None, engine, tag)
    flight = in_flight(records)
    # The log being written is the in-flight experiment's current run's (several with repeats).
    runs = run_counts(records)
    mine = state == "running"
    engine_log = engine_log_path(ws, tag)
    return {
        "tag": tag,
        "state": state,
        "pid": engine.pid if mine else None,
        "engine_started": engine.started if mine else None,
        "stopping": mine and sup.stopping(ws),
        "resumable": state != "running" and bool(records),
        "in_flight": (
            {
                "n": flight["n"],
                "description": flight["description"],
                "ts": flight["ts"],
                "log": api_path(sup.root, log_path(ws, tag, flight["n"], runs.get(flight["n"], 0) + 1)),
            }
            if flight is not None
            else None
        ),
        # With several workers: what each one is running (the record's worker, absent with one).
        "in_flight_all": [
            {
                "n": f["n"],
                "worker": f.get("worker"),
                "description": f["description"],
                "ts": f["ts"],
                "log": api_path(sup.root, log_path(ws, tag, f["n"], runs.get(f["n"], 0) + 1)),
            }
            for f in in_flight_all(records)
        ],
        "engine_log": api_path(sup.root, engine_log) if engine_log.exists() else None,
        # Whether the last training run was sandboxed ("on"/"off"), as the run guard found it; None before one.
        "sandbox": next(
            (r.get("sandbox") for r in reversed(records) if r.get("type") == "run" and "sandbox" in r), None
        ),
        **summarize(records),
    }
