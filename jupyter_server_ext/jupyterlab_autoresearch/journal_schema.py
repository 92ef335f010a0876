"""What a journal record must be: a server-side mirror of src/core/journal.ts's zod schema,
enough to refuse a damaged or hostile line before any of it reaches a response, not a second
source of truth. Numbers are read as zod reads them: NaN, Infinity and 1e999 are no JSON
numbers here, an integer is a safe one (|n| <= 2^53 - 1), and fields have their minimums."""

from __future__ import annotations

import json
import math

STATUSES = {"keep", "discard", "crash", "interrupted", "rejected"}
END_REASONS = {"max-experiments", "hours", "signal", "stop", "exhausted", "budget", "error"}
# Why a training run was made (src/core/journal.ts RUN_PURPOSES).
RUN_PURPOSES = {"measure", "noise", "confirm", "best"}
# A step mode record's event (src/core/journal.ts ReviewRecord).
REVIEW_EVENTS = {"pending", "decision", "mode"}

# The fields src/core/journal.ts requires of each record type, with the JSON types allowed.
# A server-side mirror of the zod schema: enough to refuse a corrupt line, not a second source of truth.
STR, INT, NUM, BOOL, OBJ, ARR, NULL = "string", "integer", "number", "boolean", "object", "array", "null"
SCHEMA: dict[str, dict[str, tuple[str, ...]]] = {
    "run_start": {
        "ts": (STR,),
        "tag": (STR,),
        "branch": (STR,),
        "resume": (BOOL,),
        "base_commit": (STR,),
        "proposer": (STR,),
        "seed": (INT,),
        "config": (OBJ,),
        "readonly_hashes": (OBJ,),
        "engine_version": (STR,),
        "pid": (INT,),
    },
    "experiment_start": {"ts": (STR,), "n": (INT,), "parent_commit": (STR,), "description": (STR,)},
    # One training run of an experiment's code (or of the best's, re-measured while judging one).
    "run": {
        "ts": (STR,),
        "n": (INT,),
        "commit": (STR,),
        "state": (STR,),
        "purpose": (STR,),
        "k": (INT,),
        "seed": (INT,),
        "metric": (NUM, NULL),
        "summary": (OBJ,),
        "run_s": (NUM,),
        "exit_code": (INT, NULL),
        "signal": (STR, NULL),
        "reason": (STR, NULL),
        "memory_gb": (NUM,),
        "log_path": (STR, NULL),
    },
    "experiment": {
        "ts": (STR,),
        "n": (INT,),
        "parent_commit": (STR,),
        "commit": (STR, NULL),
        "description": (STR,),
        "rationale": (STR,),
        "diff": (STR,),
        "lines_added": (INT,),
        "lines_removed": (INT,),
        "summary": (OBJ,),
        "metric": (NUM, NULL),
        "best_before": (NUM, NULL),
        "delta": (NUM, NULL),
        "status": (STR,),
        "reason": (STR, NULL),
        "memory_gb": (NUM,),
        "timings": (OBJ,),
        "exit_code": (INT, NULL),
        "signal": (STR, NULL),
        "log_path": (STR, NULL),
        "log_truncated": (BOOL,),
        "proposer": (STR,),
        "usage": (OBJ,),
        "cost_usd": (NUM,),
    },
    # Step mode: a proposal offered to its reviewer, the reviewer's decision, or step mode switched (from n on).
    "review": {"ts": (STR,), "n": (INT,), "event": (STR,)},
    "run_end": {
        "ts": (STR,),
        "reason": (STR,),
        "message": (STR, NULL),
        "best_commit": (STR, NULL),
        "best_metric": (NUM, NULL),
    },
}

# Fields a record may carry, checked when present: the noise-aware engine's additions to an
# experiment (journals from before it lack them) and the optional flags of a run.
OPTIONAL: dict[str, dict[str, tuple[str, ...]]] = {
    "experiment": {"state": (STR,), "runs": (ARR,), "verdict": (OBJ,), "same_as": (INT,), "review": (OBJ,)},
    "review": {
        "step": (BOOL,),
        "action": (STR,),
        "source": (STR,),
        "waited_s": (NUM,),
        "note": (STR,),
        "edit_diff": (STR,),
        "all": (BOOL,),
    },
    # sandbox: "on" or "off" as the run guard found it; strays: processes it killed after the run.
    "run": {"log_truncated": (BOOL,), "sandbox": (STR,), "strays": (INT,)},
}


# The least value of numeric fields, wherever they appear (src/core/journal.ts's nonnegative() and min()).
MINIMUM = {
    "n": 0,
    "k": 1,
    "worker": 1,
    "lines_added": 0,
    "lines_removed": 0,
    "cost_usd": 0,
    "memory_gb": 0,
    "run_s": 0,
    "waited_s": 0,
}
# cache_creation_1h_input_tokens is optional (the 1-hour part of the cache writes, src/core/journal.ts's Usage).
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "cache_creation_1h_input_tokens",
)
# zod's int() is a safe integer: beyond 2^53 a JavaScript number is no longer exact.
SAFE_INT = 2**53 - 1


class _NotFinite(ValueError):
    """A number JSON cannot carry (NaN, Infinity) or that overflows a double (1e999)."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def _no_constant(name: str):
    raise _NotFinite(name)


def _shown(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _json_type(value) -> str:
    # bool is an int in Python but not in JSON; integral floats count as integers, as in zod,
    # and only safe integers do (zod 4's int()).
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT if abs(value) <= SAFE_INT else NUM
    if isinstance(value, float):
        return INT if value.is_integer() and abs(value) <= SAFE_INT else NUM
    if isinstance(value, str):
        return STR
    if isinstance(value, dict):
        return OBJ
    return "array"


def _type_problem(kind: str, name: str, value, allowed: tuple[str, ...]) -> str | None:
    got = _json_type(value)
    if got not in allowed and not (got == INT and NUM in allowed):
        return f"{kind}.{name} is {got} {_shown(value)}, expected {' or '.join(allowed)}"
    low = MINIMUM.get(name)
    if low is not None and got in (INT, NUM) and value < low:
        return f"{kind}.{name} is {_shown(value)}, expected {low} or more"
    return None


def _usage_problem(usage: dict) -> str | None:
    """Token counts: whole numbers of 0 or more (the server adds them up)."""
    for key in USAGE_KEYS:
        if key in usage:
            value = usage[key]
            if _json_type(value) != INT or value < 0:
                return f"experiment.usage.{key} is {_shown(value)}, expected a whole number of 0 or more"
    return None


def _whole_numbers(record: dict) -> dict:
    """The record with integral floats in integer fields made ints ('n': 3.0 names log 0003.log, not an error)."""
    fields = {**SCHEMA.get(record["type"], {}), **OPTIONAL.get(record["type"], {}), "worker": (INT,)}
    for name, allowed in fields.items():
        if allowed[0] == INT and isinstance(record.get(name), float):
            record[name] = int(record[name])
    for ref in record.get("runs") or []:
        for name in ("k", "seed"):
            if isinstance(ref.get(name), float):
                ref[name] = int(ref[name])
    return record


def _run_refs_problem(runs: list) -> str | None:
    """An experiment's `runs`: each a run of its code with k, seed and metric (null for a crash)."""
    for i, ref in enumerate(runs):
        if not isinstance(ref, dict):
            return f"experiment.runs[{i}] is not an object"
        for name, allowed in (
            ("k", (INT,)),
            ("seed", (INT,)),
            ("metric", (NUM, NULL)),
            ("run_s", (NUM,)),
            ("log_path", (STR, NULL)),
        ):
            if name not in ref:
                return f"experiment.runs[{i}] lacks {name!r}"
            if (why := _type_problem(f"experiment.runs[{i}]", name, ref[name], allowed)) is not None:
                return why
    return None


def problem(record) -> str | None:
    """What is wrong with a parsed journal record, or None when it is valid."""
    if not isinstance(record, dict):
        return "not a JSON object"
    kind = record.get("type")
    fields = SCHEMA.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return f"unknown record type {kind!r}"
    for name, allowed in fields.items():
        if name not in record:
            return f"{kind} record lacks {name!r}"
        if (why := _type_problem(kind, name, record[name], allowed)) is not None:
            return why
    for name, allowed in OPTIONAL.get(kind, {}).items():
        if name in record and (why := _type_problem(kind, name, record[name], allowed)) is not None:
            return why
    if kind == "experiment" and "runs" in record and (why := _run_refs_problem(record["runs"])) is not None:
        return why
    if kind == "run" and record["purpose"] not in RUN_PURPOSES:
        return f"run.purpose {record['purpose']!r} is not one of {sorted(RUN_PURPOSES)}"
    if kind in ("experiment", "experiment_start", "run") and "worker" in record:
        # Optional: present only in runs with several workers (1..N).
        worker = record["worker"]
        if _json_type(worker) != INT or worker < 1:
            return f"{kind}.worker is {json.dumps(worker)}, expected a whole number of 1 or more"
    if kind == "experiment" and (why := _usage_problem(record["usage"])) is not None:
        return why
    if kind == "experiment" and record["status"] not in STATUSES:
        return f"experiment.status {record['status']!r} is not one of {sorted(STATUSES)}"
    if kind == "review" and record["event"] not in REVIEW_EVENTS:
        return f"review.event {record['event']!r} is not one of {sorted(REVIEW_EVENTS)}"
    if kind == "run_end" and record["reason"] not in END_REASONS:
        return f"run_end.reason {record['reason']!r} is not one of {sorted(END_REASONS)}"
    return None


class RecordProblem(ValueError):
    """What is wrong with one journal line, in words (JournalTail adds the file and line)."""


def parse(raw: bytes) -> dict:
    """A journal line as a valid record (integral floats in integer fields made ints); RecordProblem otherwise."""
    try:
        record = json.loads(raw, parse_float=_finite, parse_constant=_no_constant)
    except _NotFinite as err:
        raise RecordProblem(f"holds the number {str(err)[:40]}, which is not finite") from None
    except RecursionError:
        raise RecordProblem("is nested too deeply to be a journal record") from None
    except ValueError as err:
        raise RecordProblem(f"is not JSON ({str(getattr(err, 'msg', err))[:80]})") from None
    why = problem(record)
    if why is not None:
        raise RecordProblem(f"is not a valid journal record: {why}")
    return _whole_numbers(record)
