"""`.autoresearch/<tag>/state.json`: what the engine makes of a run's journal (best with its
estimate, counts, cost, experiments in flight, status, what trust cost), read here instead of
interpreting the journal a second time (src/core/journal/run-state.ts is the one interpreter).

The engine rewrites it after every journal append. When it is missing, or reflects another
journal size than the file's and no engine works on the run (an old run, an engine killed
between an append and the write, a journal written by hand), `autoresearch state` rewrites it
once for that size. Blocking (a file read, perhaps a Node.js run): the server calls it in a thread.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path

from fastjsonschema import JsonSchemaValueException

from ..confine import OUTSIDE_STATE, OutsideError, open_inside, read_json_inside
from ..errors import DomainError, StateUnreadable, Unavailable
from ..node import SERVER_HOST
from ..supervise.engine_commands import engine_command
from .schema_check import JSON_NUMBERS, compile_schema, int_plan, load_schema, whole_numbers
from .schema_words import describe
from .status_words import AWAITING_REVIEW, DIED, RUNNING, STOPPED
from .workspaces import LAYOUT, STATE_DIR, STATE_FILE, api_path, journal_path, state_path

# Far above a real one (its lists are the experiments in flight and the best's changes).
MAX_STATE_BYTES = 16 * 1024 * 1024
# What state.json must be (src/core/journal/run-state.ts's RunStateFile), written by the build beside the engine.
STATE_SCHEMA = "run-state.schema.json"


def journal_size(ws: Path, tag: str) -> int | None:
    """The journal's byte size, None when it is absent (or not a file of the workspace's)."""
    try:
        fd = open_inside(journal_path(ws, tag), ws / STATE_DIR)
    except OSError:
        return None
    with open(fd, "rb") as f:
        return os.fstat(f.fileno()).st_size


@functools.cache
def _state_check():
    """src/core/journal/run-state.ts's RunStateFile as the build writes it in JSON Schema, compiled on first use."""
    root = load_schema(STATE_SCHEMA)
    return compile_schema(root, root), int_plan(root, root)


def _top_key(err: JsonSchemaValueException, state: dict) -> str:
    """The top-level key a refusal is about (the first one missing, for a missing key)."""
    if err.name == "state":
        missing = [k for k in (err.definition or {}).get("required", ()) if k not in state]
        return missing[0] if missing else "?"
    return re.split(r"[.\[]", err.name[len("state.") :], maxsplit=1)[0]


def shape_problem(state) -> str | None:
    """What makes `state` no state.json of the engine's (its schema, the one the engine writes it
    with; the folder is writable by training runs too), or None. Integral floats in its integer
    fields are made ints."""
    if not isinstance(state, dict):
        return "is not a JSON object"
    validate, integers = _state_check()
    try:
        validate(state, name_prefix="state")
    except JsonSchemaValueException as err:
        key = _top_key(err, state)
        if err.name == "state" and err.rule == "required":
            # An older engine's file (no `trust`, say): rewritten, since the panel needs the key.
            return f"lacks {key!r}, which the engine writes"
        return f"has a bad or missing {key!r} ({describe(err)})"
    whole_numbers(state, integers)
    return None


def read_state_file(ws: Path, tag: str) -> dict | None:
    """state.json's content; None when absent; StateUnreadable when it is not the engine's."""
    file = state_path(ws, tag)
    shown = api_path(ws.parent, file) if file.is_relative_to(ws.parent) else str(file)
    try:
        got = read_json_inside(file, ws / STATE_DIR, MAX_STATE_BYTES, **JSON_NUMBERS)
    except OutsideError:
        raise StateUnreadable(f"{shown} {OUTSIDE_STATE}; remove it") from None
    if got is None:
        return None
    state, problem = got
    problem = problem or shape_problem(state)
    if problem is not None:
        raise StateUnreadable(f"{shown} {problem}; delete it and the engine's `autoresearch state` rewrites it")
    return state


# The journal size each run's state.json was last rewritten for, with the error if that failed:
# `autoresearch state` runs once per size, not on every request of a run it cannot read.
_refreshed: OrderedDict[Path, tuple[int, DomainError | None]] = OrderedDict()
_refreshed_lock = threading.Lock()  # requests read states in threads
REMEMBERED = 256


def refresh(ws: Path, tag: str, size: int, have_state: bool, where: str = SERVER_HOST) -> None:
    """Runs `autoresearch state` for the run, once for this journal size (again if the file it
    wrote has gone since); raises what it said."""
    key = state_path(ws, tag)
    with _refreshed_lock:
        done = _refreshed.get(key)
    if done is not None and done[0] == size and (have_state or done[1] is not None):
        if done[1] is not None:
            raise done[1]
        return
    error: DomainError | None = None
    try:
        engine_command(["state", str(ws), "--tag", tag], ws, timeout_s=60, where=where)
    except Unavailable:
        raise  # not remembered: Node.js may be installed in a moment
    except DomainError as err:
        error = StateUnreadable(
            f"the run {tag}'s {STATE_FILE} could not be rewritten from its journal by `autoresearch state`: "
            f"{err.message}"
        )
    with _refreshed_lock:
        _refreshed[key] = (size, error)
        _refreshed.move_to_end(key)
        while len(_refreshed) > REMEMBERED:
            _refreshed.popitem(last=False)
    if error is not None:
        raise error


def empty_state(tag: str) -> dict:
    """A run with no journal yet (its engine has just started): nothing happened so far, as the
    engine's deriveRunState says of an empty journal (the build writes it into layout.json)."""
    return {**LAYOUT["empty_state"], "tag": tag}


def load_state(ws: Path, tag: str, live: bool, where: str = SERVER_HOST) -> dict:
    """The run's state as the engine derives it, current with its journal unless an engine is
    writing both (`live`: then it may trail by an append); "running" becomes "died" when not live."""
    size = journal_size(ws, tag)
    try:
        state = read_state_file(ws, tag)
    except StateUnreadable:
        # A live engine rewrites it at its next append; else `autoresearch state` does now.
        state = None
    if not live and (state is None or state["journal_bytes"] != size) and size is not None:
        refresh(ws, tag, size, state is not None, where)
        state = read_state_file(ws, tag)
        if state is None:
            raise StateUnreadable(
                f"`autoresearch state` wrote no {STATE_FILE} for run {tag}; run it by hand to see why"
            )
    if state is None:
        state = empty_state(tag)
    return with_liveness(state, live)


def run_activity(state: dict, live: bool) -> str:
    """What a run is doing: "running", "awaiting-review", "stopped" or "died". The one place the
    server combines state.json with what the file cannot hold, whether an engine is alive on the run
    (src/core/journal/run-state.ts's runActivity says the same for TypeScript): its engine writes the
    file, so one killed mid-run leaves "running" behind, which without a live engine is "died"
    (resumable). A live engine works on the run even before it journals its start over a stopped
    state, and awaits review while the running state has a pending proposal."""
    if not live:
        return STOPPED if state.get("status") == STOPPED else DIED
    return AWAITING_REVIEW if state.get("status") == RUNNING and state.get("pending") else RUNNING


def with_liveness(state: dict, live: bool) -> dict:
    """The state with "running" turned into "died" when no live engine works on the run (run_activity)."""
    return state if live else {**state, "status": run_activity(state, live=False)}
