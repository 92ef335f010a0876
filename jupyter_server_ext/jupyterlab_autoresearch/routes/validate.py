"""Checking request bodies and query arguments: every refusal names the field at fault."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from typing import Any

from tornado import web

from ..generated import generated
from ..read.workspaces import TAG_RULE, valid_tag
from ..supervise.run_options import MissingOptions, proposers, run_options

# Caps on what a client may send. The largest genuine body is a few short fields; a text field
# becomes one command-line argument of the engine (Linux refuses one over 128 KiB with E2BIG)
# and a line in its log; a path is at most PATH_MAX long anyway.
MAX_BODY = 64 * 1024
MAX_TEXT = 1024
MAX_PATH = 4096
# A review decision may carry the reviewer's version of the editable files, whole; and a note of a few lines.
MAX_REVIEW_BODY = 16 * 1024 * 1024
MAX_NOTE = 8 * 1024
# An environment variable's name, as the engine's --env takes it (src/core/study/transfer-journal.ts ENV_NAME).
ENV_NAME = re.compile(generated("rules.json")["env_name_pattern"])
# What a refusal quotes of a bad value: enough to recognise it, never the whole of a huge one.
SHOWN = 60
# A query number: ASCII digits only (str.isdigit() takes '²' and '٣', which int() then refuses or reads).
QUERY_INT = re.compile(r"-?[0-9]{1,18}")


def show(value: Any) -> str:
    """A value as a refusal quotes it: JSON, cut short past SHOWN characters."""
    if isinstance(value, str) and len(value) > SHOWN:
        value = value[: SHOWN + 1]  # a slice, not the whole of a long string
    text = json.dumps(value)
    return text if len(text) <= SHOWN else text[:SHOWN] + "…"


class ApiError(web.HTTPError):
    """An HTTP error whose JSON body carries a one-line message and, for a bad input, its field."""

    def __init__(self, status: int, message: str, field: str | None = None):
        # tornado %-formats log_message when it logs; the message is shown as is.
        super().__init__(status, message.replace("%", "%%"))
        self.message = message
        self.field = field


def _number(value: Any) -> bool:
    # JSON true/false arrive as bool, a subclass of int: they are not numbers here.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def positive_number(name: str, value: Any) -> float:
    """A finite number above 0."""
    if not _number(value) or value <= 0:
        raise ApiError(400, f"{name} must be a number above 0, got {show(value)}", name)
    return value


def positive_int(name: str, value: Any) -> int:
    """A whole number above 0 (the engine's `init --budget` takes whole seconds)."""
    if not _number(value) or value != int(value) or value <= 0:
        raise ApiError(400, f"{name} must be a whole number above 0, got {show(value)}", name)
    return int(value)


def count(name: str, value: Any) -> int:
    """A whole number of 0 or more."""
    if not _number(value) or value != int(value) or value < 0:
        raise ApiError(400, f"{name} must be a whole number of 0 or more, got {show(value)}", name)
    return int(value)


def non_negative_number(name: str, value: Any) -> float:
    """A finite number of 0 or more."""
    if not _number(value) or value < 0:
        raise ApiError(400, f"{name} must be a number of 0 or more, got {show(value)}", name)
    return value


def boolean(name: str, value: Any) -> bool:
    """true or false, not a string or a number that looks like one."""
    if not isinstance(value, bool):
        raise ApiError(400, f"{name} must be true or false, got {show(value)}", name)
    return value


def text(name: str, value: Any) -> str:
    """A non-empty string without NUL characters or newlines (it becomes a command-line argument), up to MAX_TEXT."""
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise ApiError(400, f"{name} is longer than {MAX_TEXT} characters ({len(value)} given): {show(value)}", name)
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "\0\n\r"):
        raise ApiError(400, f"{name} must be a non-empty one-line string, got {show(value)}", name)
    return value


def note(name: str, value: Any) -> str:
    """A string of up to MAX_NOTE characters (lines allowed: it never reaches a command line)."""
    if not isinstance(value, str) or "\0" in value:
        raise ApiError(400, f"{name} must be a string, got {show(value)}", name)
    if len(value) > MAX_NOTE:
        raise ApiError(400, f"{name} is longer than {MAX_NOTE} characters ({len(value)} given)", name)
    return value


def files(name: str, value: Any) -> dict[str, str]:
    """An object of file path → whole content, both strings."""
    if not isinstance(value, dict) or not value:
        raise ApiError(400, f"{name} must be an object of file path to its content, got {show(value)}", name)
    for key, text in value.items():
        if not isinstance(text, str) or "\0" in key:
            raise ApiError(400, f"{name}: the content of {show(key)} must be a string, got {show(text)}", name)
    return value


def env(name: str, value: Any) -> dict[str, str]:
    """Environment variables, NAME → one-line string (each becomes an --env NAME=VALUE argument)."""
    if not isinstance(value, dict):
        raise ApiError(400, f"{name} must be an object of variable name to value, got {show(value)}", name)
    for key, text in value.items():
        if not ENV_NAME.fullmatch(key):
            raise ApiError(400, f"{name}: {show(key)} is no environment variable name (e.g. AUTORESEARCH_SCALE)", name)
        if not isinstance(text, str) or len(text) > MAX_TEXT or any(c in text for c in "\0\n\r"):
            raise ApiError(
                400, f"{name}: {key} must be a one-line string of up to {MAX_TEXT} characters, got {show(text)}", name
            )
    return value


def at_least_two(name: str, value: Any) -> int:
    """A whole number of 2 or more (a study's runs of each commit: a standard error needs two)."""
    if not _number(value) or value != int(value) or value < 2:
        raise ApiError(400, f"{name} must be a whole number of 2 or more, got {show(value)}", name)
    return int(value)


def query_count(name: str, raw: str) -> int:
    """A whole number of 0 or more given as a query argument (the event stream's `since`)."""
    if not QUERY_INT.fullmatch(raw) or raw.startswith("-"):
        raise ApiError(400, f"{name} must be a whole number of 0 or more, got {show(raw)}", name)
    return int(raw)


def query_numbers(name: str, raw: str, most: int) -> list[int]:
    """Whole numbers of 0 or more, comma-separated, at most `most` of them (experiments asked for by number)."""
    parts = raw.split(",")
    if len(parts) > most or not all(QUERY_INT.fullmatch(p) and not p.startswith("-") for p in parts):
        raise ApiError(
            400, f"{name} must be up to {most} whole numbers of 0 or more, comma-separated; got {show(raw)}", name
        )
    return [int(p) for p in parts]


def tag(name: str, value: Any) -> str:
    """A run tag the engine accepts."""
    if not isinstance(value, str) or not valid_tag(value):
        raise ApiError(400, f"{name} may only use {TAG_RULE}, got {show(value)}", name)
    return value


def one_of(*choices: str) -> Callable[[str, Any], str]:
    """A string from a fixed set."""

    def check(name: str, value: Any) -> str:
        if value not in choices:
            raise ApiError(400, f"{name} must be one of {', '.join(choices)}; got {show(value)}", name)
        return value

    return check


def path(name: str, value: Any) -> str:
    """A folder path relative to the server root ('' is the root itself), up to MAX_PATH characters."""
    if isinstance(value, str) and len(value) > MAX_PATH:
        raise ApiError(400, f"{name} is longer than {MAX_PATH} characters ({len(value)} given): {show(value)}", name)
    if not isinstance(value, str) or "\0" in value:
        raise ApiError(400, f"{name} must be a folder path relative to the server root, got {show(value)}", name)
    return value


Fields = dict[str, tuple[Callable[[str, Any], Any], bool]]

# The checker of each kind of run option (src/core/config/run-options.ts's OptionKind); 'choice' is one_of.
KIND_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "positive": positive_number,
    "nonnegative": non_negative_number,
    "positive-int": positive_int,
    "count": count,
    "text": text,
    "tag": tag,
    "switch": boolean,
}


def at_most(check: Callable[[str, Any], Any], high: float) -> Callable[[str, Any], Any]:
    """`check`, and at most `high` (run-options.json's max: for seconds, the longest a timer can wait)."""

    def bounded(name: str, value: Any) -> Any:
        checked = check(name, value)
        if checked > high:
            raise ApiError(
                400,
                f"{name} must be at most {high:g} (about 24 days: the longest a timer can wait), got {show(value)}",
                name,
            )
        return checked

    return bounded


@functools.cache
def run_fields() -> Fields:
    """POST /autoresearch/runs: the workspace, then every run option the declaration lets a client give."""
    try:
        options = run_options()
    except MissingOptions as err:
        raise ApiError(503, str(err)) from None
    fields: Fields = {"path": (path, True)}
    for option in options:
        if option["server"] == "body":
            kind = option["kind"]
            if kind != "choice":
                check = KIND_CHECKS[kind]
            elif option["key"] == "proposer":
                check = one_of(*proposers())  # each proposer declares itself (run-options.json's proposers)
            else:
                check = one_of(*option["choices"])
            fields[option["key"]] = (at_most(check, option["max"]) if "max" in option else check, False)
    return fields


def declared_option(key: str) -> dict[str, Any]:
    """One option of run-options.json (budget_s's bound is a run's, a transfer's and a new
    workspace's alike; executor's choices a run's and a transfer's)."""
    try:
        return next(o for o in run_options() if o["key"] == key)
    except (MissingOptions, StopIteration) as err:
        raise ApiError(503, str(err) or f"the engine's option list has no {key}") from None


@functools.cache
def transfer_fields() -> Fields:
    """POST /autoresearch/transfer: the run, the larger scale's environment and the study's options."""
    budget = declared_option("budget_s")
    return {
        "path": (path, True),
        "tag": (tag, False),
        "env": (env, False),
        # A transfer run's budget is bounded as a run's is (a timer waits at most that long).
        "budget_s": (at_most(positive_number, budget["max"]) if "max" in budget else positive_number, False),
        "runs": (at_least_two, False),
        "ablate": (boolean, False),
        "kernel": (text, False),
        # A run's executor choices (run-options.json): slurm replays as Slurm jobs.
        "executor": (one_of(*declared_option("executor")["choices"]), False),
    }


def resume_fields() -> Fields:
    """POST /autoresearch/runs/resume: the same, less resume, which the route itself means."""
    return {k: v for k, v in run_fields().items() if k != "resume"}


# The fields of the other bodies: name → (checker, required). null counts as absent.
STOP_FIELDS = {"path": (path, True)}
EXPORT_FIELDS = {"path": (path, True), "tag": (tag, False)}
REVIEW_FIELDS = {
    "path": (path, True),
    "tag": (tag, False),
    "n": (count, True),
    "decision": (one_of("approve", "reject"), True),
    "note": (note, False),
    "all": (boolean, False),
    "files": (files, False),
}
STEP_FIELDS = {"path": (path, True), "tag": (tag, False), "step": (boolean, True)}


def source(name: str, value: Any) -> str:
    """A repository URL or path, or a ref, for `init --from`: one line, and never read as one of git's options."""
    value = text(name, value)
    if value.startswith("-"):
        raise ApiError(400, f'{name} may not start with "-", got {show(value)}', name)
    return value


def whole_seconds_up_to(high: int) -> Callable[[str, Any], int]:
    """A whole number of seconds from 1 to `high`, the range named in the refusal (init --budget's rule)."""

    def check(name: str, value: Any) -> int:
        if not _number(value) or value != int(value) or not 0 < value <= high:
            raise ApiError(
                400,
                f"{name} must be a whole number of seconds from 1 to {high} "
                f"(about 24 days: the longest a timer can wait), got {show(value)}",
                name,
            )
        return int(value)

    return check


@functools.cache
def workspace_fields() -> Fields:
    """POST /autoresearch/workspaces: the folder, a template and its budget, or a repository."""
    budget = declared_option("budget_s")
    return {
        "path": (path, True),
        "template": (one_of("tiny-cpu"), False),
        # Written into program.md: bounded as the engine bounds a run's budget (run-options.json's
        # max), so the workspace made is one the engine runs.
        "budget_s": (whole_seconds_up_to(budget["max"]), False),
        # A repository laid out like the original, instead of a template (`autoresearch init --from`).
        "from": (source, False),
        "ref": (source, False),
    }


def body(raw: bytes, fields: Fields, max_bytes: int = MAX_BODY) -> dict:
    """Parses a JSON object body (up to max_bytes) and checks each field; unknown and missing fields are refused."""
    if len(raw or b"") > max_bytes:
        raise ApiError(413, f"the request body is {len(raw)} bytes, over the {max_bytes // 1024} KiB this route takes")
    try:
        data = json.loads(raw or b"null")
    except (ValueError, RecursionError):
        raise ApiError(400, "the request body is not JSON") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the request body must be a JSON object")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ApiError(400, f"unknown field {show(unknown[0])}; expected {', '.join(fields)}", unknown[0][:100])
    out: dict[str, Any] = {}
    for name, (check, required) in fields.items():
        value = data.get(name)
        if value is None:
            if required:
                raise ApiError(400, f"{name} is required", name)
            continue
        out[name] = check(name, value)
    return out


def query_int(handler: web.RequestHandler, name: str, default: int, low: int, high: int) -> int:
    """An integer query argument within [low, high]."""
    raw = handler.get_query_argument(name, None)
    if raw is None:
        return default
    if not QUERY_INT.fullmatch(raw):
        raise ApiError(400, f"{name} must be a whole number between {low} and {high}, got {show(raw)}", name)
    value = int(raw)
    if not low <= value <= high:
        raise ApiError(400, f"{name} must be between {low} and {high}, got {value}", name)
    return value
