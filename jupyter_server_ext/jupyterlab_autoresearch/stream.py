"""`/autoresearch/events`: a WebSocket that follows a run's journal and its live training log."""

from __future__ import annotations

import json
from pathlib import Path

from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado.ioloop import PeriodicCallback
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from . import validate
from .confine import OutsideError, inside, read_from
from .handlers import OUTSIDE_MESSAGE, JsonErrors, WorkspaceLookup
from .journal import JournalError, JournalTail
from .runs import state_of
from .workspaces import STATE_DIR, api_path, journal_path, log_path

POLL_MS = 500
# How much of a log already written a new subscriber gets: enough to show, bounded for a flood.
LOG_BACKLOG = 64 * 1024
LOG_CHUNK = 256 * 1024
# Records per `records` message: a long replay goes in a few messages of bounded size.
RECORDS_PER_MESSAGE = 500


class EventsHandler(JsonErrors, WorkspaceLookup, WebSocketMixin, WebSocketHandler, JupyterHandler):
    """Sends {type: records|log|state|error} messages as the run's files change; polling keeps it simple.

    `records` carries the journal records read in one poll, `start` being the first one's index
    (the replay on connecting is one message); a client reconnects with `since` = records seen.
    """

    def set_default_headers(self):
        """JupyterHandler's headers (CSP and such) do not apply to a WebSocket upgrade."""

    @ws_authenticated
    async def get(self, *args, **kwargs):
        """Checks the query (path, tag, since) before upgrading the connection: a refusal is its
        HTTP status (ApiError is an HTTPError) and one warning line in the server's log."""
        self.ws = self.workspace(self.get_query_argument("path", None))
        self.tag = self.pick_tag(self.ws, self.get_query_argument("tag", None))
        self.since = validate.query_count("since", self.get_query_argument("since", "0"))
        await super().get(*args, **kwargs)

    def open(self, *args, **kwargs):
        """Starts following the journal from its first line, sending records from `since` on."""
        super().open()
        self.tail = JournalTail(journal_path(self.ws, self.tag), self.ws / STATE_DIR)
        self.count = 0
        self.last_type: str | None = None
        # Experiments started and not finished, by number: one per worker.
        self.flights: dict[int, dict] = {}
        # Runs journaled per experiment: its next run writes log NNNN-(count+1).log.
        self.run_counts: dict[int, int] = {}
        self.log_n: int | None = None
        self.log_run = 1
        self.log_offset = 0
        self.log_partial = b""
        self.log_reset = False
        self.sent_state: dict | None = None
        self.broken = False
        self.error: str | None = None
        self.refused_log: Path | None = None
        interval = self.settings.get("autoresearch_poll_ms", POLL_MS)
        self.timer = PeriodicCallback(self.poll, interval)
        self.timer.start()
        self.poll()

    def on_close(self):
        timer = getattr(self, "timer", None)
        if timer is not None:
            timer.stop()

    def on_message(self, message):
        """Clients only listen; anything they send is ignored."""

    def send(self, message: dict) -> None:
        try:
            self.write_message(json.dumps(message))
        except WebSocketClosedError:
            self.timer.stop()

    def poll(self) -> None:
        """One look at the journal and the in-flight log; sends what is new."""
        if not self.broken:
            try:
                records = self.tail.read_new()
            except JournalError as err:
                # Said once, after the good records before it; the socket stays open so the
                # client can show it, but reads stop.
                self.broken = True
                records = err.records
                self.error = err.describe(self.sup.root)
            batch: list[dict] = []
            for record in records:
                if record["type"] in ("experiment", "run") and record["n"] == self.log_n:
                    self.send_records(batch)  # the last lines come after what came before them
                    self.follow_log(final=True)  # and before the record that ends them
                    self.log_n = None
                if record["type"] == "run":
                    # An experiment measured again: its next run writes a log of its own.
                    self.run_counts[record["n"]] = self.run_counts.get(record["n"], 0) + 1
                if self.count >= self.since:
                    batch.append(record)
                self.count += 1
                if len(batch) >= RECORDS_PER_MESSAGE:
                    self.send_records(batch)
                self.last_type = record["type"]
                if record["type"] == "experiment_start":
                    self.flights[record["n"]] = record
                elif record["type"] == "experiment":
                    self.flights.pop(record["n"], None)
                elif record["type"] in ("run_start", "run_end"):
                    self.flights.clear()  # what a dead engine left in flight was never finished
            self.send_records(batch)
        if self.error is not None:
            self.send({"type": "error", "message": self.error})
            self.error = None
        # The log followed is the newest experiment in flight's (with workers, the others' are
        # in their own files, a `GET log` away).
        newest = self.flights[max(self.flights)] if self.flights else None
        if newest is not None and newest["n"] != self.log_n:
            if self.log_n is not None:
                self.follow_log(final=True)
            self.start_log(newest["n"], self.run_counts.get(newest["n"], 0) + 1)
        if self.log_n is not None:
            self.follow_log()
        self.send_state()

    def send_records(self, batch: list[dict]) -> None:
        """Sends records read in one poll as one message (a replay of 2,000 is one, not 2,000), then empties the list."""
        if batch:
            self.send({"type": "records", "start": self.count - len(batch), "records": list(batch)})
            batch.clear()

    def send_state(self) -> None:
        engine = self.sup.engine(self.ws)
        newest = self.flights[max(self.flights)] if self.flights else None
        state = state_of(self.last_type, engine, self.tag)
        running = state == "running"
        message = {
            "type": "state",
            "tag": self.tag,
            "state": state,
            "pid": engine.pid if running else None,
            "stopping": running and self.sup.stopping(self.ws),
            # The run an engine works on in this workspace, this one or another: a client
            # following a finished run learns of a new one without polling.
            "engine_tag": engine.tag if engine else None,
            "records": self.count,
            "in_flight": (
                {"n": newest["n"], "description": newest["description"], "ts": newest["ts"]} if newest else None
            ),
        }
        if message != self.sent_state:
            self.sent_state = message
            self.send(message)

    def start_log(self, n: int, run: int = 1) -> None:
        """Follows experiment n's log (of its run-th run), from a bounded backlog of what it has written so far."""
        self.log_n = n
        self.log_run = run
        self.log_partial = b""
        self.log_reset = True
        file = log_path(self.ws, self.tag, n, run)
        size = file.stat().st_size if file.exists() and inside(file, self.ws / STATE_DIR) else 0
        self.log_offset = max(0, size - LOG_BACKLOG)
        self.log_skip_first = self.log_offset > 0  # mid-line: the cut line is not shown

    def follow_log(self, final: bool = False) -> None:
        """Sends the log's new complete lines (and, when final, the unfinished last one)."""
        file: Path = log_path(self.ws, self.tag, self.log_n, self.log_run)
        try:
            data = read_from(file, self.ws / STATE_DIR, self.log_offset, LOG_CHUNK)
        except FileNotFoundError:
            data = b""
        except OutsideError:
            # Said once per log; the run's records keep coming.
            if self.refused_log != file:
                self.refused_log = file
                where = OUTSIDE_MESSAGE.format(folder=api_path(self.sup.root, self.ws / STATE_DIR))
                self.send({"type": "error", "message": f"experiment {self.log_n}'s log {where}"})
            data = b""
        self.log_offset += len(data)
        data = self.log_partial + data
        lines = data.split(b"\n")
        self.log_partial = lines.pop()
        if final and self.log_partial:
            lines.append(self.log_partial)
            self.log_partial = b""
        if self.log_skip_first and lines:
            lines = lines[1:]
            self.log_skip_first = False
        if lines or (self.log_reset and final):
            self.send(
                {
                    "type": "log",
                    "n": self.log_n,
                    "path": api_path(self.sup.root, file),
                    "reset": self.log_reset,
                    "lines": [ln.decode(errors="replace") for ln in lines],
                }
            )
            self.log_reset = False
