"""The transfer study for the panel: the engine flags a study request becomes, program.md's
defaults for it (the engine's reading of the front matter, `autoresearch transfer --defaults`),
and the study's summary.json as the engine derived it (src/core/study/transfer.ts), read inside the
workspace's `.autoresearch` folder. Blocking (files, perhaps a Node.js run): call it in a thread."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from ..confine import OUTSIDE_STATE, OutsideError, read_json_inside
from ..errors import DomainError, FileInTheWay, StateUnreadable
from ..supervise.engine_commands import engine_command
from .workspaces import LAYOUT, STATE_DIR, api_path, transfer_path

MAX_SUMMARY_BYTES = 16 * 1024 * 1024
NO_DEFAULTS = {"env": {}, "budget_s": None}

# program.md's defaults, by file and its (mtime, size): the panel asks on each poll of a study.
_defaults: dict[Path, tuple[tuple[int, int], dict]] = {}
_defaults_lock = threading.Lock()


def study_flags(opts: dict) -> list[str]:
    """`autoresearch transfer`'s flags for a request's options (env, budget_s, runs, ablate, and a kernel's or the executor)."""
    flags: list[str] = []
    for key, value in (opts.get("env") or {}).items():
        flags += ["--env", f"{key}={value}"]
    if opts.get("budget_s") is not None:
        flags += ["--budget", str(opts["budget_s"])]
    if opts.get("runs") is not None:
        flags += ["--runs", str(opts["runs"])]
    if opts.get("ablate"):
        flags.append("--ablate")
    if opts.get("kernel") is not None:
        # The token travels in the environment (JUPYTER_TOKEN), never in argv.
        flags += ["--executor", "kernel", "--kernel", opts["kernel"], "--server-url", opts["server_url"]]
    elif opts.get("executor") is not None:
        # slurm: each replay a job with program.md's slurm: settings, as a run's experiments are.
        flags += ["--executor", opts["executor"]]
    if opts.get("python") is not None:
        flags += ["--python", opts["python"]]
    return flags


def defaults(ws: Path) -> tuple[dict, str | None]:
    """program.md's `transfer` block ({env, budget_s}; {} and None when absent), and why it could not be read, or None."""
    program = ws / "program.md"
    try:
        st = os.stat(program)
    except OSError:
        return NO_DEFAULTS, None
    key = (st.st_mtime_ns, st.st_size)
    with _defaults_lock:
        known = _defaults.get(program)
    if known is not None and known[0] == key:
        return known[1], None
    try:
        out = json.loads(engine_command(["transfer", str(ws), "--defaults"], ws, timeout_s=60))
    except DomainError as err:
        return NO_DEFAULTS, err.message
    except ValueError:
        return NO_DEFAULTS, "autoresearch transfer --defaults printed no JSON"
    env, budget = (
        out.get("env") if isinstance(out, dict) else None,
        out.get("budget_s") if isinstance(out, dict) else None,
    )
    found = {
        "env": env if isinstance(env, dict) and all(isinstance(v, str) for v in env.values()) else {},
        "budget_s": budget if isinstance(budget, (int, float)) and not isinstance(budget, bool) else None,
    }
    with _defaults_lock:
        _defaults[program] = (key, found)
    return found, None


def summary(ws: Path, tag: str) -> dict | None:
    """The study's summary.json, or None when run `tag` has no study yet."""
    file = transfer_path(ws, tag, LAYOUT["transfer_summary"])
    shown = api_path(ws.parent, file)
    try:
        got = read_json_inside(file, ws / STATE_DIR, MAX_SUMMARY_BYTES)
    except OutsideError:
        raise FileInTheWay(f"{shown} {OUTSIDE_STATE}; remove it") from None
    if got is None:
        return None
    study, problem = got
    fix = "delete it and rerun the study, which rewrites it from its journal"
    if problem is not None:
        raise StateUnreadable(f"{shown} {problem}; {fix}")
    if (
        not isinstance(study, dict)
        or not isinstance(study.get("changes"), list)
        or not isinstance(study.get("summary"), dict)
    ):
        raise StateUnreadable(f"{shown} is not a transfer summary; {fix}")
    return study
