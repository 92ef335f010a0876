"""Following one run for the event stream, without a socket or a file: the transport (stream.py)
reads the journal, the live log and state.json and feeds their bytes here; this returns the
messages to send, {type: records|log|state|run_state|error}.

What it follows comes from the engine's state.json (the one interpreter of the journal), taken
only when it reflects exactly the records read so far: the log followed is its newest
experiment in flight's current run's, and a `run_state` message (state.json as the engine wrote
it, "running" turned into "died" without a live engine) always describes the records sent
before it. Records themselves are only validated and counted here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .journal import Form, JournalError, JournalLines
from .run_state import run_activity
from .schema_check import SchemaMissing
from .workspaces import LAYOUT

# How much of a log already written a new subscriber gets by default (the server's
# Autoresearch.log_backlog_bytes): enough to show, bounded for a flood.
LOG_BACKLOG = 64 * 1024
LOG_CHUNK = 256 * 1024
# Records per `records` message: a long replay goes in a few messages of bounded size.
RECORDS_PER_MESSAGE = 500


@dataclass(frozen=True)
class LogWanted:
    """The log to read for the follower: experiment n's run-th run's, from `offset` (at most
    LOG_CHUNK bytes), or, with offset None (a log just picked), its last bytes (the server's
    Autoresearch.log_backlog_bytes)."""

    n: int
    run: int
    offset: int | None


@dataclass(frozen=True)
class LogBytes:
    """What the transport read of the log wanted: `data` from file offset `at`; data None when
    the file could not be read (a symlink out or a FIFO in its place), b"" when absent."""

    data: bytes | None
    at: int = 0


@dataclass(frozen=True)
class Liveness:
    """The engine, as the supervisor sees it, at this poll."""

    live: bool  # an engine works on this run
    pid: int | None
    stopping: bool
    engine_tag: str | None  # the run an engine works on in this workspace, this one or another


# What a light replay keeps of a finished experiment's record (src/core/journal/light-record.ts, written
# into layout.json by the build): what the panel's list, chart, filter and notices read. The rest
# (diff, summary, usage, timings, the proposal's reasoning…) only its rendered output shows, and
# the panel fetches it whole (GET experiments?n=) when it renders one.
LIGHT: tuple[str, ...] = tuple(LAYOUT["light_experiment_fields"])
# And of its proposal's meta: the research notes, which the panel's notes section shows.
LIGHT_META: tuple[str, ...] = tuple(LAYOUT["light_meta_fields"])


def lighten(record: dict) -> dict:
    """A record as a light replay sends it: an experiment with its LIGHT fields, its meta's
    LIGHT_META ones (and `light: true`), an experiment's start as its number alone (the panel
    takes what is in flight from state.json), anything else whole."""
    kind = record["type"]
    if kind == "experiment":
        light = {k: record[k] for k in LIGHT if k in record}
        meta = record.get("proposal_meta")
        kept = {k: meta[k] for k in LIGHT_META if k in meta} if isinstance(meta, dict) else {}
        if kept:
            light["proposal_meta"] = kept
        return {**light, "light": True}
    if kind == "experiment_start":
        return {"type": kind, "n": record["n"]}
    return record


class Row(NamedTuple):
    """A record as a light replay encodes it: its shape (its type, then its other keys in order)
    and the compact JSON array of those keys' values. A `records` message of rows names each shape
    once, where ten thousand objects would repeat their keys: a long run's replay is then well
    under the bytes of the same records as objects (bench/panel measures it)."""

    shape: tuple[str, ...]
    values: bytes


def light_row(record: dict) -> Row:
    """A (lightened) record as a Row."""
    keys = tuple(key for key in record if key != "type")
    values = json.dumps([record[key] for key in keys], separators=(",", ":")).encode()
    return Row((record["type"], *keys), values)


# The light replay's form of the journal, made and encoded once per record with the journal's
# cached reading (journal.read_journal_at).
LIGHT_FORM = Form(lighten, light_row)


class RecordsMessage(dict):
    """A `records` message, {type, start, records}, that also holds each record's journal line as
    read, or its Row: `text()` is its JSON built from those, instead of encoding ten thousand
    records again for every subscriber's replay. Lines are valid JSON already (validated when
    read), and the message carries them as they are; rows go as {type, start, shapes, rows}, each
    row its shape's index in `shapes` followed by its values (src/lab/panel/run/run-events.ts turns
    them back into records)."""

    def __init__(self, start: int, records: list[dict], raw: list | None):
        super().__init__(type="records", start=start, records=records)
        self.raw = raw if raw is not None and len(raw) == len(records) else None

    def text(self) -> str:
        # A batch is all lines (one feed) or all rows (the cached light form): its first tells.
        if self.raw and isinstance(self.raw[0], Row):
            return self._rows_text(self.raw)
        if self.raw is not None:
            try:
                lines = b",".join(self.raw).decode()
            except UnicodeDecodeError:
                pass  # a line json.loads read in another encoding: encoded afresh
            else:
                return f'{{"type": "records", "start": {self["start"]}, "records": [{lines}]}}'
        return json.dumps(self)

    def _rows_text(self, rows: list[Row]) -> str:
        shapes: dict[tuple[str, ...], int] = {}
        parts: list[bytes] = []
        for row in rows:
            index = shapes.setdefault(row.shape, len(shapes))
            # "[v1,v2]" becomes "[index,v1,v2]"; "[]" (a record of its type alone) "[index]".
            parts.append(b"[%d%s%s" % (index, b"," if len(row.values) > 2 else b"", row.values[1:]))
        body = b",".join(parts).decode()  # json.dumps wrote ASCII
        return f'{{"type":"records","start":{self["start"]},"shapes":{json.dumps(list(shapes))},"rows":[{body}]}}'


class RunFollower:
    """One subscriber's view of a run: feed it what was read, send what it returns."""

    def __init__(
        self,
        tag: str,
        since: int,
        journal_name: str,
        log_name: Callable[[int, int], str],
        log_refused: Callable[[int], str],
    ):
        self.tag = tag
        self.since = since
        # How files are named in messages: paths as a client sees them.
        self.log_name = log_name
        self.log_refused = log_refused
        self.lines = JournalLines(Path(journal_name))
        self.count = 0  # records read, sent or not (those before `since` are not)
        self.broken = False  # a bad journal line: said once, then reads stop
        self.state: dict | None = None  # the last state.json that matched the records read
        self.sent_run_state: dict | None = None
        self.sent_liveness: dict | None = None
        self.said: set[str] = set()  # error messages given, so each is given once
        self.log_n: int | None = None
        self.log_run = 1
        self.log_offset: int | None = None
        self.log_partial = b""
        self.log_reset = False
        self.log_skip_first = False

    # --- what the transport asks -------------------------------------------------------------

    @property
    def wanted(self) -> LogWanted | None:
        """The log to read now, if any."""
        return None if self.log_n is None else LogWanted(self.log_n, self.log_run, self.log_offset)

    # --- what the transport feeds ------------------------------------------------------------

    def journal(self, data: bytes, log: LogBytes | None = None) -> list[dict]:
        """New journal bytes (whole lines). `log` is what the log wanted held when read after the
        journal: a record that ends that log comes after its last lines, which go out first."""
        if self.broken:
            return []
        raw: list[bytes] = []
        try:
            records = self.lines.feed(data, raw)
        except JournalError as err:
            # Said once, after the good records before it; the stream stays open so the client
            # can show it, but reads stop.
            self.broken = True
            records, error = err.records, err.describe()
        except SchemaMissing as err:
            # No schema to check lines with (an unbuilt checkout): said once, naming the fix.
            self.broken = True
            records, error = [], err.message
        else:
            error = None
        return self._take(records, raw, log, error)

    def replay(self, records: list[dict], raw: list[bytes] | list[Row], lines: int) -> list[dict]:
        """The journal's first `lines` lines as the records already read and validated from them,
        with their JSON lines or rows (the server's cached reading of the file, or its cached light
        form, journal.read_journal_at): taken as if fed; the bytes fed next follow them."""
        out = [] if self.broken else self._take(records, raw, None, None)
        self.lines.lines = lines
        return out

    def _take(self, records: list[dict], raw: list, log: LogBytes | None, error: str | None) -> list[dict]:
        """Records read, with their lines or rows (then the error that stopped the reading, if one did), as messages."""
        out: list[dict] = []
        batch: list[tuple[dict, bytes | Row | None]] = []
        lines = raw if len(raw) == len(records) else [None] * len(records)
        for record, line in zip(records, lines, strict=True):
            if record["type"] in ("experiment", "run") and record["n"] == self.log_n:
                self._flush(batch, out)  # the last lines come after what came before them
                out += self._log_lines(log, final=True)  # and before the record that ends them
                log = None
                self.log_n = None
            if self.count >= self.since:
                batch.append((record, line))
            self.count += 1
            if len(batch) >= RECORDS_PER_MESSAGE:
                self._flush(batch, out)
        self._flush(batch, out)
        if error is not None:
            out += self.error(error)
        if log is not None and self.log_n is not None:
            out += self._log_lines(log)
        return out

    def journal_unreadable(self, message: str) -> list[dict]:
        """The journal cannot be read at all (it resolves outside the workspace): said once, reads stop."""
        self.broken = True
        return self.error(message)

    def run_state(self, state: dict | None) -> list[dict]:
        """state.json's content (liveness applied); taken only when it reflects the records read.
        Switching to its newest experiment's log finishes the one followed before."""
        if state is None or state.get("records") != self.count:
            return []
        self.state = state
        out: list[dict] = []
        if state != self.sent_run_state:
            self.sent_run_state = state
            out.append({"type": "run_state", "run_state": state})
        newest = self._newest()
        if newest is not None and (newest["n"], newest["runs"] + 1) != (self.log_n, self.log_run):
            if self.log_n is not None:
                out += self._log_lines(LogBytes(b"", self.log_offset or 0), final=True)
            self._start_log(newest["n"], newest["runs"] + 1)
        return out

    def log(self, log: LogBytes) -> list[dict]:
        """What the log wanted holds from where the follower is."""
        return [] if self.log_n is None else self._log_lines(log)

    def liveness(self, engine: Liveness) -> list[dict]:
        """The `state` message, when it differs from the last one sent."""
        # The stream says whether an engine works on the run; the proposal awaiting review is state.json's.
        state = run_activity({"status": self.state["status"] if self.state else None}, engine.live)
        newest = self._newest()
        message = {
            "type": "state",
            "tag": self.tag,
            "state": state,
            "pid": engine.pid if engine.live else None,
            "stopping": engine.live and engine.stopping,
            # A client following a finished run learns of a new one without polling.
            "engine_tag": engine.engine_tag,
            "records": self.count,
            "in_flight": (
                {"n": newest["n"], "description": newest.get("description"), "ts": newest.get("ts")} if newest else None
            ),
        }
        if message == self.sent_liveness:
            return []
        self.sent_liveness = message
        return [message]

    def error(self, message: str) -> list[dict]:
        """An error message, once."""
        if message in self.said:
            return []
        self.said.add(message)
        return [{"type": "error", "message": message}]

    # --- inside ------------------------------------------------------------------------------

    def _newest(self) -> dict | None:
        flights = self.state["in_flight"] if self.state else []
        return max(flights, key=lambda f: f["n"]) if flights else None

    def _flush(self, batch: list[tuple[dict, bytes | Row | None]], out: list[dict]) -> None:
        """Records read in one feed as one message (a replay of 2,000 is a few, not 2,000)."""
        if batch:
            raw = [line for _, line in batch]
            lines = None if None in raw else raw
            out.append(RecordsMessage(self.count - len(batch), [record for record, _ in batch], lines))
            batch.clear()

    def _start_log(self, n: int, run: int) -> None:
        self.log_n, self.log_run = n, run
        self.log_offset = None  # its backlog first
        self.log_partial = b""
        self.log_reset = True

    def _log_lines(self, log: LogBytes | None, final: bool = False) -> list[dict]:
        """The log's new complete lines (and, when final, the unfinished last one)."""
        n, run = self.log_n, self.log_run
        if log is not None and log.data is None:
            log = LogBytes(b"", self.log_offset or 0)
            refused = self.error(self.log_refused(n))  # said once per log; the records keep coming
        else:
            refused = []
        data = b"" if log is None else log.data
        if self.log_offset is None:
            # The backlog: read mid-line past its start, the cut line is not shown.
            self.log_skip_first = log is not None and log.at > 0
            self.log_offset = 0 if log is None else log.at
        self.log_offset += len(data)
        lines = (self.log_partial + data).split(b"\n")
        self.log_partial = lines.pop()
        if final and self.log_partial:
            lines.append(self.log_partial)
            self.log_partial = b""
        if self.log_skip_first and lines:
            lines = lines[1:]
            self.log_skip_first = False
        if not lines and not (self.log_reset and final):
            return refused
        message = {
            "type": "log",
            "n": n,
            "path": self.log_name(n, run),
            "reset": self.log_reset,
            "lines": [ln.decode(errors="replace") for ln in lines],
        }
        self.log_reset = False
        return [*refused, message]
