"""`.autoresearch/engine.json`, the engine's claim on a workspace, and whether the process it
names is that engine still (see procid.py for why a pid alone is not enough)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..confine import inside
from ..read.workspaces import LAYOUT, STATE_DIR, engine_file_path
from . import procid

# What may hold a workspace (src/core/journal/layout.ts's ENGINE_KINDS): a run, or a transfer study; and the engine command of each.
KINDS: tuple[str, ...] = tuple(LAYOUT["engine_kinds"])


@dataclass(frozen=True)
class EngineInfo:
    """`.autoresearch/engine.json`: the engine that holds (or held) a workspace.

    `identity` is the engine process's and `run_identities` each training run group leader's,
    by pgid (see procid.py); engine.json files from before identities have neither. `kind` says
    what holds the workspace: a run ("run", also for files from before kinds) or a transfer study.
    """

    pid: int
    tag: str
    started: str
    run_pgid: int | None
    run_pgids: tuple[int, ...] = ()
    identity: dict | None = None
    run_identities: dict[int, dict] = field(default_factory=dict)
    kind: str = "run"

    def to_json(self) -> dict:
        return {"pid": self.pid, "tag": self.tag, "started": self.started, "run_pgid": self.run_pgid, "kind": self.kind}

    def runs(self, tag: str) -> bool:
        """Whether this is a run's engine (not a transfer study) working on run `tag`."""
        return self.kind == "run" and self.tag == tag

    def run_groups(self) -> list[int]:
        """The process groups of the training runs in progress: run_pgid, and run_pgids with several workers."""
        groups = [self.run_pgid] if self.run_pgid else []
        return groups + [g for g in self.run_pgids if g not in groups]


def _whole(value) -> bool:
    return type(value) is int and value > 0


def read_engine_info(ws: Path) -> EngineInfo | None:
    """The engine recorded for a workspace, alive or not; None when absent or unreadable."""
    file = engine_file_path(ws)
    if not inside(file, ws / STATE_DIR):
        return None  # a symlink out of the workspace is no engine.json of ours
    try:
        raw = json.loads(file.read_text())
        pgid = raw.get("run_pgid")
        if (
            not _whole(raw["pid"])
            or not isinstance(raw["tag"], str)
            or not isinstance(raw["started"], str)
            or (pgid is not None and not _whole(pgid))
        ):
            return None
        pgids = raw.get("run_pgids")
        idents = raw.get("run_identities")
        return EngineInfo(
            raw["pid"],
            raw["tag"],
            raw["started"],
            pgid,
            tuple(dict.fromkeys(g for g in pgids if _whole(g))) if isinstance(pgids, list) else (),
            raw.get("identity") if procid.valid(raw.get("identity")) else None,
            {int(k): v for k, v in idents.items() if k.isascii() and k.isdigit() and procid.valid(v)}
            if isinstance(idents, dict)
            else {},
            raw.get("kind") if raw.get("kind") in KINDS else "run",
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        # Half-written or foreign: the engine treats it the same way, as no engine.
        return None


def is_engine_process(info: EngineInfo, ws: Path) -> bool:
    """Whether engine.json's pid is the very engine it recorded, running `run` (or, for a
    transfer study, `transfer`) on this workspace.

    Its identity (boot and start time) must match, so a pid reused after the engine ended, or
    after a reboot, is never taken for it; and its command line must be our bundle's command on
    this workspace, so an identity copied from some other process does not make it an engine.
    """
    if not procid.same_process(info.pid, info.identity):
        return False
    return engine_argv_names(info.pid, ws, info.kind)


def engine_argv_names(pid: int, ws: Path, command: str = "run") -> bool:
    """Whether pid's command line is `… <bundle> <command> … <ws> …` (ws as given, relative to its cwd)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        words = [a.decode(errors="replace") for a in argv if a]
        cwd: str | None = os.readlink(f"/proc/{pid}/cwd")
    except FileNotFoundError:
        return False
    except OSError:
        words = _ps_argv(pid)  # no /proc (macOS): ask ps; its cwd is unknown
        cwd = None
        if words is None:
            return False
    starts = [
        i
        for i, w in enumerate(words[:-2])
        if w.endswith(("autoresearch.cjs", "engine/main.ts")) and words[i + 1] == command
    ]
    if not starts:
        return False
    target = os.path.realpath(ws)
    for word in words[starts[0] + 2 :]:
        if os.path.isabs(word) or cwd is not None:
            if os.path.realpath(os.path.join(cwd or "/", word)) == target:
                return True
        elif cwd is None:
            return True  # a relative workspace and no way to know what it is relative to
    return False


def _ps_argv(pid: int) -> list[str] | None:
    """A process's command line from ps, for systems without /proc; None if it is gone."""
    try:
        out = subprocess.run(["ps", "-o", "stat=,command=", "-p", str(pid)], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    fields = out.stdout.split()
    if out.returncode != 0 or not fields or fields[0].startswith("Z"):
        return None
    return fields[1:]
