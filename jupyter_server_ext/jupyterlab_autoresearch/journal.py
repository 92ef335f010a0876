"""Reading the engine's journal (`.autoresearch/<tag>/journal.jsonl`): validated, incremental."""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from pathlib import Path

from .confine import OutsideError, open_inside

# problem is the schema check tests and callers use by name; the schema lives in journal_schema.
from .journal_schema import USAGE_KEYS, RecordProblem, parse, problem  # noqa: F401


class JournalError(ValueError):
    """A journal line that is not a valid record: which file, which line, what is wrong and the fix."""

    def __init__(self, path: Path, line: int | None, why: str):
        self.path, self.line, self.why = Path(path), line, why
        super().__init__(self.describe())
        # The good records read before the bad line in the same call, so none is lost.
        self.records: list[dict] = []

    def describe(self, root: str | Path | None = None) -> str:
        """The message, with the file's path relative to `root` when it is inside it (as a client names files)."""
        shown = str(self.path)
        if root is not None:
            try:
                shown = self.path.relative_to(os.path.realpath(root)).as_posix()
            except ValueError:
                pass
        if self.line is None:
            return f"{shown} {self.why}"
        return f"{shown} line {self.line} {self.why}; repair or delete that line to read this run again"


OUTSIDE = (
    "resolves outside its workspace's .autoresearch folder (a symlink, or not a regular file); "
    "the server reads no journal there: remove it"
)


class JournalTail:
    """Follows one journal file: each call returns the records appended since the last one."""

    def __init__(self, path: Path, confine: Path | None = None):
        self.path = Path(path)
        # The folder the file must resolve inside (a workspace's .autoresearch), when served.
        self.confine = confine
        self.offset = 0
        self.lines = 0
        self.restarts = 0
        self._inode: int | None = None

    def read_new(self) -> list[dict]:
        """Validated records from complete new lines; a line still without its newline waits."""
        try:
            fd = open_inside(self.path, self.confine) if self.confine is not None else os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return []
        except OutsideError:
            raise JournalError(self.path, None, OUTSIDE) from None
        with open(fd, "rb") as f:
            st = os.fstat(fd)
            if self._inode is not None and (st.st_ino != self._inode or st.st_size < self.offset):
                # Replaced or cut below what was read: not an append, so start over.
                self.offset, self.lines = 0, 0
                self.restarts += 1
            self._inode = st.st_ino
            if st.st_size == self.offset:
                return []
            f.seek(self.offset)
            data = f.read(st.st_size - self.offset)
        records: list[dict] = []
        start = 0
        # A last line without its newline is a write in progress or cut short by a kill: the
        # engine drops such a line before its next append, so it is never counted here.
        while (end := data.find(b"\n", start)) >= 0:
            raw = data[start:end]
            line_no = self.lines + 1
            if raw.strip():
                try:
                    records.append(self._parse(raw, line_no))
                except JournalError as err:
                    err.records = records
                    raise
            # Only past a good line: a corrupt one keeps failing, it is never skipped silently.
            self.offset += end + 1 - start
            self.lines = line_no
            start = end + 1
        return records

    def _parse(self, raw: bytes, line_no: int) -> dict:
        try:
            return parse(raw)
        except RecordProblem as err:
            raise JournalError(self.path, line_no, str(err)) from None


class _Cached:
    def __init__(self, path: Path, confine: Path | None):
        self.tail = JournalTail(path, confine)
        self.records: list[dict] = []


_cache: OrderedDict[tuple[Path, Path | None], _Cached] = OrderedDict()
CACHE_SIZE = 32


def read_journal(path: Path, confine: Path | None = None) -> list[dict]:
    """Every record of a journal (empty if absent), reading only what was appended since last time;
    with `confine`, only a regular file that resolves inside that folder is read."""
    path = Path(path)
    key = (path, confine)
    entry = _cache.pop(key, None) or _Cached(path, confine)
    _cache[key] = entry  # most recently used last
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    restarts = entry.tail.restarts
    try:
        new = entry.tail.read_new()
    except JournalError as err:
        new, error = err.records, err
    else:
        error = None
    if entry.tail.restarts != restarts:
        entry.records = []  # the file was replaced, not appended to
    entry.records.extend(new)
    if error is not None:
        raise error
    return list(entry.records)


def in_flight_all(records: list[dict]) -> list[dict]:
    """Every experiment_start without an experiment record of its number: one per busy worker."""
    done = {r["n"] for r in records if r["type"] == "experiment"}
    return [r for r in records if r["type"] == "experiment_start" and r["n"] not in done]


def run_counts(records: list[dict]) -> dict[int, int]:
    """Training runs journaled per experiment number (an experiment in flight's next run is count + 1)."""
    counts: dict[int, int] = {}
    for r in records:
        if r["type"] == "run":
            counts[r["n"]] = counts.get(r["n"], 0) + 1
    return counts


def in_flight(records: list[dict]) -> dict | None:
    """The latest experiment in flight (with several workers, see in_flight_all for each one's)."""
    flights = in_flight_all(records)
    return flights[-1] if flights else None


def best_of(experiments: list[dict]) -> dict | None:
    """The best experiment as the engine sees it: the last keep with a commit and a metric."""
    best = None
    for e in experiments:
        if e["status"] == "keep" and e["commit"] and e["metric"] is not None:
            best = e
    return best


def summarize(records: list[dict]) -> dict:
    """Counts, best, baseline, cost and configuration of a run, from its records."""
    exps = [r for r in records if r["type"] == "experiment"]
    starts = [r for r in records if r["type"] == "run_start"]
    counts: dict[str, int] = {}
    for e in exps:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    best = best_of(exps)
    baseline = next((e for e in exps if e["status"] == "keep"), None)
    last = records[-1] if records else None
    config = starts[-1]["config"] if starts else {}
    # Each cost is finite; a sum of absurd ones may not be, and JSON has no Infinity.
    cost = sum(e["cost_usd"] for e in exps)
    return {
        "branch": starts[-1]["branch"] if starts else None,
        "proposer": starts[-1]["proposer"] if starts else None,
        "metric": config.get("metric"),
        "direction": config.get("direction"),
        "budget_s": config.get("budget_s"),
        # Experiments at once; journals of one worker (and older ones) have no such key.
        "workers": config.get("workers", 1),
        "started": starts[0]["ts"] if starts else None,
        "updated": last["ts"] if last else None,
        "experiments": len(exps),
        "counts": counts,
        "best": {"n": best["n"], "metric": best["metric"], "commit": best["commit"]} if best else None,
        "baseline": baseline["metric"] if baseline else None,
        "cost_usd": round(cost, 6) if math.isfinite(cost) else None,
        "tokens": sum(int(e["usage"].get(k, 0)) for e in exps for k in USAGE_KEYS),
        "end": (
            {"reason": last["reason"], "message": last["message"], "ts": last["ts"]}
            if last and last["type"] == "run_end"
            else None
        ),
        # What a client has seen so far, for the event stream's `since`.
        "records": len(records),
    }
