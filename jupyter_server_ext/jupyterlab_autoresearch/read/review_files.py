"""Step mode for the panel, through the files the engine reads and writes in a run's folder
(src/core/step-mode/review.ts, src/engine/step-mode/step-review.ts): the proposal awaiting review (the engine's), a
reviewer's decision and the switch of step mode (the server's, written atomically, source "panel")."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from ..confine import OUTSIDE_STATE, OutsideError, read_json_inside, replace_inside
from ..errors import BadRequest, Conflict, FileInTheWay, StateUnreadable
from ..supervise.engine_info import EngineInfo
from .workspaces import REVIEW_DECISION_FILE, REVIEW_MODE_FILE, REVIEW_PENDING_FILE, STATE_DIR, api_path, run_file

# A pending proposal holds the editable files whole: far below this for any real train.py.
MAX_PENDING_BYTES = 32 * 1024 * 1024


def now() -> str:
    """The time as the engine writes it (JavaScript's toISOString: milliseconds, Z)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def several_workers(workers: int) -> str:
    """The refusal of step mode for a run with several workers, in the engine's words (review-mode.ts)."""
    return f"step mode reviews one proposal at a time: this run has {workers} workers"


def _strings(value) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def pending_problem(p) -> str | None:
    """What makes `p` no PendingReview of the engine's, in the fields served and used, or None."""
    if not isinstance(p, dict):
        return "is not a JSON object"
    checks = {
        "n": type(p.get("n")) is int and p["n"] >= 0,
        "since": isinstance(p.get("since"), str),
        "description": isinstance(p.get("description"), str),
        "rationale": isinstance(p.get("rationale"), str),
        "diff": isinstance(p.get("diff"), str),
        "files": _strings(p.get("files")),
        "editable": isinstance(p.get("editable"), list) and all(isinstance(f, str) for f in p["editable"]),
        "proposer": isinstance(p.get("proposer"), str),
        "why": p.get("why") is None or isinstance(p["why"], str),
        "refused": p.get("refused") is None or isinstance(p["refused"], dict),
    }
    bad = [key for key, ok in checks.items() if not ok]
    return f"has a bad or missing {bad[0]!r}" if bad else None


def read_pending(ws: Path, tag: str) -> dict | None:
    """The run's review-pending.json as the engine wrote it, or None when nothing awaits review."""
    file = run_file(ws, tag, REVIEW_PENDING_FILE)
    shown = api_path(ws.parent, file)
    try:
        got = read_json_inside(file, ws / STATE_DIR, MAX_PENDING_BYTES)
    except OutsideError:
        raise FileInTheWay(f"{shown} {OUTSIDE_STATE}; remove it") from None
    if got is None:
        return None
    pending, problem = got
    problem = problem or pending_problem(pending)
    if problem is not None:
        raise StateUnreadable(f"{shown} {problem}; delete it and the engine offers the proposal again on --resume")
    return pending


def _write(ws: Path, tag: str, name: str, value: dict) -> None:
    file = run_file(ws, tag, name)
    try:
        replace_inside(file, ws / STATE_DIR, (json.dumps(value, indent=2) + "\n").encode())
    except OutsideError:
        raise FileInTheWay(
            f"cannot write {api_path(ws.parent, file)}: the run's folder resolves outside the workspace's "
            ".autoresearch folder; remove what is in its place"
        ) from None


def _engine_on(engine: EngineInfo | None, tag: str) -> bool:
    return engine is not None and engine.runs(tag)


def decide(ws: Path, tag: str, engine: EngineInfo | None, body: dict) -> dict:
    """Writes the panel's decision on the pending proposal (body: n, decision, note?, all?, files?)
    for the engine to take; refuses one that names another proposal or a file it may not replace."""
    n = body["n"]
    if not _engine_on(engine, tag):
        raise Conflict(f"no engine is running on run {tag}; resume it to decide #{n}")
    pending = read_pending(ws, tag)
    if pending is None:
        raise Conflict(f"no proposal awaits review in run {tag}")
    if n != pending["n"]:
        raise Conflict(f"#{n} is not awaiting review; #{pending['n']} is ({pending['description']})", "n")
    approve = body["decision"] == "approve"
    for key in ("all", "files"):
        if key in body and not approve:
            raise BadRequest(f"{key} goes with an approval, not a rejection", key)
    files = body.get("files")
    if files is not None:
        outside = sorted(f for f in files if f not in pending["editable"])
        if outside:
            raise BadRequest(
                f"files: not editable: {', '.join(outside)} (the editable files are {', '.join(pending['editable'])})",
                "files",
            )
    decision = {"n": n, "decision": body["decision"], "source": "panel", "ts": now()}
    for key in ("note", "all", "files"):
        if key in body:
            decision[key] = body[key]
    _write(ws, tag, REVIEW_DECISION_FILE, decision)
    return {"tag": tag, "n": n, "decision": body["decision"]}


def set_step(ws: Path, tag: str, engine: EngineInfo | None, step: bool, state: dict) -> dict:
    """Switches step mode for the run its engine is running (the mode file the engine follows)."""
    if not _engine_on(engine, tag):
        raise Conflict(f"no engine is running on run {tag}; choose Review each proposal before Start")
    workers = (state.get("run") or {}).get("workers") or 1
    if step and workers > 1:
        raise Conflict(several_workers(workers), "step")
    _write(ws, tag, REVIEW_MODE_FILE, {"step": step, "source": "panel", "ts": now()})
    return {"tag": tag, "step": step}
