"""`/autoresearch/events`: a WebSocket that follows a run's journal, its live training log and its
state.json. This side only reads files and moves messages; follower.py decides what to send."""

from __future__ import annotations

import asyncio
import json

from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado.ioloop import PeriodicCallback
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from ..confine import OutsideError, read_from, read_tail
from ..errors import DomainError
from ..read.follower import (
    LIGHT_FORM,
    LOG_CHUNK,
    Liveness,
    LogBytes,
    LogWanted,
    RecordsMessage,
    RunFollower,
)
from ..read.journal import OUTSIDE, FileTail, JournalError, read_journal_at
from ..read.run_state import load_state
from ..read.schema_check import SchemaMissing
from ..read.workspaces import STATE_DIR, api_path, journal_path, log_path
from . import validate
from .lookup import LOG_BACKLOG_BYTES, POLL_MS, WorkspaceLookup
from .web_errors import JsonErrors


class EventsHandler(JsonErrors, WorkspaceLookup, WebSocketMixin, WebSocketHandler, JupyterHandler):
    """Sends {type: records|log|state|run_state|error} messages as the run's files change; polling keeps it simple.

    With `light=1` the replay on connecting sends the records already written lightened
    (follower.lighten): what the panel lists and charts, not each output's diff and summary, as
    rows of values under shapes named once (follower.Row).

    `records` carries the journal records read in one poll, `start` being the first one's index
    (the replay on connecting is one message, or a few); a client reconnects with `since` = records seen.
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
        # light=1: the replay's experiments without what only a rendered output shows (follower.lighten).
        self.light = self.get_query_argument("light", "0") == "1"
        await super().get(*args, **kwargs)

    async def open(self, *args, **kwargs):
        """Starts following the journal from its first line, sending records from `since` on."""
        super().open()
        self.folder = self.ws / STATE_DIR
        journal = journal_path(self.ws, self.tag)
        self.follower = RunFollower(
            self.tag,
            self.since,
            api_path(self.sup.root, journal),
            lambda n, run: api_path(self.sup.root, log_path(self.ws, self.tag, n, run)),
            lambda n: f"experiment {n}'s log {self.outside(self.ws)}",
        )
        self.closed = False
        # The replay: the journal as GET runs last read and validated it (read_journal's cache),
        # so a subscriber to a long run costs no second reading; the file is followed from there.
        # A journal that cannot be read that way is read here from its first line instead, so
        # the good records before a bad one still go out, then the error.
        try:
            # Lightened and encoded as rows (a long run's replay is then a sixth of the journal's
            # bytes) once per record, not per subscriber.
            form = LIGHT_FORM if self.light else None
            records, raw, at = await asyncio.to_thread(read_journal_at, journal, self.folder, form)
        except (JournalError, SchemaMissing):
            self.tail = FileTail(journal, self.folder)
            replay = []
        else:
            self.tail = FileTail(journal, self.folder, at)
            replay = self.follower.replay(records, raw, at.lines)
        self.timer = PeriodicCallback(self.poll, self.settings[POLL_MS])
        await self.poll(replay)
        self.timer.start()

    def on_close(self):
        self.closed = True
        timer = getattr(self, "timer", None)
        if timer is not None:
            timer.stop()

    def on_message(self, message):
        """Clients only listen; anything they send is ignored."""

    def send(self, messages: list[dict]) -> None:
        for message in messages:
            try:
                self.write_message(message.text() if isinstance(message, RecordsMessage) else json.dumps(message))
            except WebSocketClosedError:
                self.on_close()
                return

    async def poll(self, replay: list[dict] | None = None) -> None:
        """One look at the journal, the log followed and state.json; sends what is new (after the
        replay's messages, on the first look)."""
        if self.closed:
            return
        follower = self.follower
        out: list[dict] = list(replay or [])
        if not follower.broken:
            try:
                data = self.tail.read()
            except OutsideError:
                out += follower.journal_unreadable(f"{api_path(self.sup.root, self.tail.path)} {OUTSIDE}")
            else:
                # The log is read after the journal: a record that ends it follows all its lines.
                out += follower.journal(data, self.read_log(follower.wanted))
        engine = self.sup.engine(self.ws)
        live = engine is not None and engine.tag == self.tag
        if not follower.broken:
            try:
                state = await asyncio.to_thread(load_state, self.ws, self.tag, live)
            except DomainError as err:
                out += follower.error(err.message)
            else:
                out += follower.run_state(state)
        if follower.wanted is not None:
            out += follower.log(self.read_log(follower.wanted))
        out += follower.liveness(
            Liveness(live, engine.pid if live else None, live and self.sup.stopping(self.ws), engine and engine.tag)
        )
        self.send(out)

    def read_log(self, wanted: LogWanted | None) -> LogBytes | None:
        """The bytes of the log the follower wants (data None when it resolves outside the folder)."""
        if wanted is None:
            return None
        file = log_path(self.ws, self.tag, wanted.n, wanted.run)
        try:
            if wanted.offset is None:
                data, size = read_tail(file, self.folder, self.settings[LOG_BACKLOG_BYTES])
                return LogBytes(data, size - len(data))
            return LogBytes(read_from(file, self.folder, wanted.offset, LOG_CHUNK), wanted.offset)
        except FileNotFoundError:
            return LogBytes(b"", wanted.offset or 0)
        except OutsideError:
            return LogBytes(None, wanted.offset or 0)
