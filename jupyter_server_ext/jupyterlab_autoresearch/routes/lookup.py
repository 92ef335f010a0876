"""Finding the workspace, run and journal a request names, inside the server's root and each
workspace's `.autoresearch` folder; shared by the REST and WebSocket handlers."""

from __future__ import annotations

from pathlib import Path

from ..confine import inside
from ..read.journal import JournalError, read_journal
from ..read.workspaces import STATE_DIR, PathError, api_path, journal_path, resolve, run_tags
from ..supervise.supervisor import Supervisor
from . import validate
from .validate import ApiError

# The keys of the server's supervisor and of the event stream's settings (server_config.py's
# poll_interval_s and log_backlog_bytes) in the tornado application's settings.
SUPERVISOR = "autoresearch_supervisor"
POLL_MS = "autoresearch_poll_ms"
LOG_BACKLOG_BYTES = "autoresearch_log_backlog_bytes"
# A file of a run that a symlink (or a FIFO) puts out of reach: what the client is told.
OUTSIDE_MESSAGE = (
    "resolves outside {folder} or is not a regular file (a symlink or a FIFO left there, perhaps by a training run); "
    "the server serves nothing outside a workspace's .autoresearch folder: remove it"
)


class WorkspaceLookup:
    """A handler mixin: the request's workspace folder, run tag and journal records."""

    @property
    def sup(self) -> Supervisor:
        return self.settings[SUPERVISOR]

    def workspace(self, raw: str | None, field: str = "path", must_exist: bool = True) -> Path:
        """The absolute folder for an API path, inside the server root."""
        if raw is None:
            raise ApiError(400, f"{field} is required", field)
        validate.path(field, raw)  # a query argument is checked as a body's field is
        try:
            ws = resolve(self.sup.root, raw)
        except PathError as err:
            raise ApiError(400, f"{field}: {err}", field) from None
        if must_exist and not ws.is_dir():
            status = 404 if self.request.method == "GET" else 400
            raise ApiError(status, f"{field}: there is no folder {validate.show(raw)}", field)
        return ws

    def query_workspace(self) -> Path:
        return self.workspace(self.get_query_argument("path", None))

    def pick_tag(self, ws: Path, tag: str | None) -> str:
        """The tag asked for, else the running engine's, else the latest run's."""
        engine = self.sup.engine(ws)
        if tag is not None:
            validate.tag("tag", tag)
            journal = journal_path(ws, tag)
            if journal.exists() and not inside(journal, ws / STATE_DIR):
                raise ApiError(403, f"run {tag}'s journal {self.outside(ws)}", "tag")
            if not journal.exists() and not (engine and engine.tag == tag):
                raise ApiError(404, f"no run tagged {validate.show(tag)} in {self.rel(ws)}", "tag")
            return tag
        if engine is not None:
            return engine.tag
        tags = run_tags(ws)
        if not tags:
            raise ApiError(404, f"no runs in {self.rel(ws)} yet")
        return tags[0]

    def records(self, ws: Path, tag: str) -> list[dict]:
        """The run's journal records; a damaged journal is a 409 that names the line and the fix."""
        try:
            return read_journal(journal_path(ws, tag), ws / STATE_DIR)
        except JournalError as err:
            # The request is fine, the run's file is not: a conflict with the resource's state.
            raise ApiError(409, err.describe(self.sup.root)) from None

    def outside(self, ws: Path) -> str:
        """The end of a refusal of a file of ws's that resolves out of its .autoresearch folder."""
        return OUTSIDE_MESSAGE.format(folder=self.rel(ws / STATE_DIR))

    def rel(self, path: Path) -> str:
        return api_path(self.sup.root, path) or "/"
