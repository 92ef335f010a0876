"""What an engine just started has written: its run_start record (its checks passed) or its error line."""

from __future__ import annotations

import json
from pathlib import Path

from ..confine import read_from
from .engine_commands import scrub

PREFIX = "autoresearch: "


def _read_from(file: Path, folder: Path, offset: int) -> bytes:
    """What a file inside `folder` holds past `offset`; nothing when it cannot be read (or is a symlink out)."""
    try:
        return read_from(file, folder, offset)
    except OSError:
        return b""


def run_started(journal: Path, offset: int, pid: int, record_type: str = "run_start") -> bool:
    """Whether the engine `pid` has written its start record (a run's run_start, a study's study_start) past `offset` of the journal."""
    for line in _read_from(journal, journal.parent.parent, offset).split(b"\n")[:-1]:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("type") == record_type and record.get("pid") == pid:
            return True
    return False


def failure_message(log_file: Path, offset: int, code: int) -> str:
    """The engine's one-line error from its log past `offset` (the `autoresearch: …` line), else a fallback."""
    lines = _read_from(log_file, log_file.parent, offset).decode(errors="replace").splitlines()
    errors = [ln for ln in lines if ln.startswith(PREFIX)]
    if errors:
        return scrub(errors[-1][len(PREFIX) :])
    tail = [ln for ln in lines if ln.strip()]
    return scrub(tail[-1] if tail else f"the engine exited with code {code} and printed nothing")
