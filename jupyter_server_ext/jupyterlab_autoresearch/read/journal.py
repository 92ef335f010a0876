"""Reading the engine's journal (`.autoresearch/<tag>/journal.jsonl`): validated, incremental."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..confine import OutsideError, open_inside

# journal_schema checks records against the engine's own schema (engine/journal-record.schema.json).
from .journal_schema import RecordProblem, checks, parse


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


@dataclass(frozen=True)
class JournalPosition:
    """How far a journal file was read: the bytes and the number of its whole lines, and which file it was."""

    offset: int
    lines: int
    inode: int | None


class FileTail:
    """The whole lines appended to a journal since the last call; a file replaced or cut short is read from its start again."""

    def __init__(self, path: Path, confine: Path | None = None, at: JournalPosition | None = None):
        self.path = Path(path)
        # The folder the file must resolve inside (a workspace's .autoresearch), when served.
        self.confine = confine
        # Where an earlier reader of the same file got to (read_journal_at), to go on from.
        self.offset = at.offset if at else 0
        self.restarts = 0
        self._inode: int | None = at.inode if at else None

    def read(self) -> bytes:
        """The new complete lines (b"" while the file is absent); OutsideError when it resolves outside `confine`."""
        try:
            fd = open_inside(self.path, self.confine) if self.confine is not None else os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return b""
        with open(fd, "rb") as f:
            st = os.fstat(fd)
            if self._inode is not None and (st.st_ino != self._inode or st.st_size < self.offset):
                # Replaced or cut below what was read: not an append, so start over.
                self.offset = 0
                self.restarts += 1
            self._inode = st.st_ino
            if st.st_size == self.offset:
                return b""
            f.seek(self.offset)
            data = f.read(st.st_size - self.offset)
        # Whole lines only: a last line without its newline is a write in progress, or one cut
        # short by a kill that the engine drops (truncates) before its next append.
        data = data[: data.rfind(b"\n") + 1]
        self.offset += len(data)
        return data


class JournalLines:
    """A journal's bytes, fed as they come, as validated records: no file and no I/O (the event
    stream's follower feeds it what the socket's side read)."""

    def __init__(self, path: Path):
        # Named in errors only.
        self.path = Path(path)
        self.pending = b""
        self.lines = 0

    def reset(self) -> None:
        """The file was replaced: what follows is its first line."""
        self.pending, self.lines = b"", 0

    def feed(self, data: bytes, raw: list[bytes] | None = None) -> list[dict]:
        """Records from the complete lines now held; a line still without its newline waits. A bad
        line raises JournalError (with the good records before it) and stays, so it fails again.
        With `raw`, each record's line as read is appended to it (the event stream sends those)."""
        checks()  # no schema (SchemaMissing) fails here, before a line is taken
        data = self.pending + data
        records: list[dict] = []
        start = 0
        # A last line without its newline is a write in progress or cut short by a kill: the
        # engine drops such a line before its next append, so it is never counted here.
        while (end := data.find(b"\n", start)) >= 0:
            line = data[start:end]
            line_no = self.lines + 1
            if line.strip():
                try:
                    records.append(self._parse(line, line_no))
                    if raw is not None:
                        raw.append(line)
                except JournalError as err:
                    # Only past a good line: a corrupt one keeps failing, it is never skipped silently.
                    self.pending = data[start:]
                    err.records = records
                    raise
            self.lines = line_no
            start = end + 1
        self.pending = data[start:]
        return records

    def _parse(self, raw: bytes, line_no: int) -> dict:
        try:
            return parse(raw)
        except RecordProblem as err:
            raise JournalError(self.path, line_no, str(err)) from None


class JournalTail:
    """Follows one journal file: each call returns the records appended since the last one."""

    def __init__(self, path: Path, confine: Path | None = None):
        self.path = Path(path)
        self.file = FileTail(path, confine)
        self.lines = JournalLines(path)

    @property
    def restarts(self) -> int:
        return self.file.restarts

    def read_new(self, raw: list[bytes] | None = None) -> list[dict]:
        """Validated records from complete new lines; a line still without its newline waits.
        With `raw`, their lines as read are appended to it."""
        checks()  # no schema (SchemaMissing) fails before the file is read, so no line is lost
        restarts = self.file.restarts
        try:
            data = self.file.read()
        except OutsideError:
            raise JournalError(self.path, None, OUTSIDE) from None
        if self.file.restarts != restarts:
            self.lines.reset()
        try:
            return self.lines.feed(data, raw)
        except JournalError:
            # The bad line is read from the file again next time, so a repair made in place counts.
            self.file.offset -= len(self.lines.pending)
            self.lines.pending = b""
            raise


class Form(NamedTuple):
    """A derived form of a journal's records, kept with its cached reading (read_journal_at): `make`
    turns a record into the form's (follower.lighten), `encode` that into what is sent of it."""

    make: Callable[[dict], dict]
    encode: Callable[[dict], object]


class _Cached:
    def __init__(self, path: Path, confine: Path | None):
        self.tail = JournalTail(path, confine)
        self.records: list[dict] = []
        # Each record's line as read, for the event stream's replay (sent without encoding again).
        self.raw: list[bytes] = []
        # Derived forms of the records (the light replay's), each with its encoding, kept up with
        # the records: a form is made and encoded once per record, not per subscriber.
        self.forms: dict[Form, tuple[list[dict], list[object]]] = {}

    def form(self, form: Form) -> tuple[list[dict], list[object]]:
        """The records as `form` makes them, with each one's encoding, extended to the records read."""
        records, encoded = self.forms.setdefault(form, ([], []))
        for record in self.records[len(records) :]:
            made = form.make(record)
            records.append(made)
            encoded.append(form.encode(made))
        return records, encoded


_cache: OrderedDict[tuple[Path, Path | None], _Cached] = OrderedDict()
CACHE_SIZE = 32
_cache_lock = threading.Lock()


def read_journal(path: Path, confine: Path | None = None) -> list[dict]:
    """Every record of a journal (empty if absent), reading only what was appended since last time;
    with `confine`, only a regular file that resolves inside that folder is read."""
    with _cache_lock:  # requests read runs in threads too: one reader of a cached tail at a time
        return _read_journal(Path(path), confine)


def read_journal_at(
    path: Path, confine: Path | None = None, form: Form | None = None
) -> tuple[list[dict], list, JournalPosition]:
    """read_journal's records with their lines as read and the position they were read to, taken
    together: the event stream replays them and follows the file from there, instead of reading,
    validating and encoding a long journal again for every subscriber. With `form` (one Form for
    one form, as follower.LIGHT_FORM), the records as it makes them and their encodings, cached
    with the journal's. Raises as read_journal does."""
    with _cache_lock:
        records = _read_journal(Path(path), confine)
        entry = _cache[(Path(path), confine)]
        tail = entry.tail
        at = JournalPosition(tail.file.offset, tail.lines.lines, tail.file._inode)
        if form is None:
            return records, list(entry.raw), at
        made, encoded = entry.form(form)
        return list(made), list(encoded), at


def _read_journal(path: Path, confine: Path | None) -> list[dict]:
    key = (path, confine)
    entry = _cache.pop(key, None) or _Cached(path, confine)
    _cache[key] = entry  # most recently used last
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    restarts = entry.tail.restarts
    raw: list[bytes] = []
    try:
        new = entry.tail.read_new(raw)
    except JournalError as err:
        new, error = err.records, err
    else:
        error = None
    if entry.tail.restarts != restarts:
        entry.records, entry.raw, entry.forms = [], [], {}  # the file was replaced, not appended to
    entry.records.extend(new)
    entry.raw.extend(raw)
    if error is not None:
        raise error
    return list(entry.records)
