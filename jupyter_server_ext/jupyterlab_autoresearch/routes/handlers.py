"""The server extension's REST routes, all under `<base_url>/autoresearch/`."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import nbformat
import tornado
from jupyter_server.utils import url_path_join

from ..confine import OutsideError, read_tail, replace_inside
from ..errors import DomainError, FileInTheWay
from ..node import engine_path, find_node
from ..notebooks.signing import sign_node
from ..read.journal import JournalError
from ..read.runs import run_status
from ..read.status_words import CORRUPT
from ..read.workspaces import STATE_DIR, api_path, find_workspaces, free_tag, log_path, run_tags
from ..server_config import Autoresearch
from ..supervise.engine_info import EngineInfo
from ..supervise.git_check import find_git
from ..supervise.starter import EngineStarter
from ..supervise.supervisor import Supervisor
from ..version import __version__
from . import validate
from .base_handler import BaseHandler
from .compare_handler import CompareHandler
from .lookup import LOG_BACKLOG_BYTES, POLL_MS, SUPERVISOR
from .review_handlers import ReviewHandler, StepHandler
from .stream import EventsHandler
from .transfer_handler import TransferHandler
from .validate import ApiError
from .web_errors import answers_domain_errors


class StatusHandler(BaseHandler):
    """`GET /autoresearch/status`: the package version, the engine bundle, the host's Node.js and git."""

    @tornado.web.authenticated
    async def get(self):
        # `node --version` and `git --version` are subprocesses: keep them off the event loop.
        node, git = await asyncio.gather(asyncio.to_thread(find_node), asyncio.to_thread(find_git))
        engine = engine_path()
        self.finish(
            {
                "version": __version__,
                "engine": {"path": str(engine), "exists": engine.is_file()},
                "node": node.to_json(),
                "git": git.to_json(),
            }
        )


class WorkspacesHandler(BaseHandler):
    """`GET`: workspaces under the root with their runs; `POST {path, template?, budget_s?}` or
    `POST {path, from, ref?}`: create one from a template or from a repository."""

    @tornado.web.authenticated
    async def get(self):
        folders = await asyncio.to_thread(find_workspaces, self.sup.root)
        out = []
        for ws in folders:
            engine = self.sup.engine(ws)
            out.append(
                {
                    "path": api_path(self.sup.root, ws),
                    "name": ws.name,
                    "program": (ws / "program.md").is_file(),
                    "runs": run_tags(ws),
                    "engine": engine.to_json() if engine else None,
                }
            )
        self.finish({"workspaces": out})

    @tornado.web.authenticated
    @answers_domain_errors
    async def post(self):
        body = validate.body(self.request.body, validate.workspace_fields())
        ws = self.workspace(body["path"], must_exist=False)
        if ws == self.sup.root:
            raise ApiError(400, "path: name a new folder, not the server's root", "path")
        if "from" in body and "template" in body:
            raise ApiError(400, "template and from exclude each other: choose one", "from")
        if "ref" in body and "from" not in body:
            raise ApiError(400, "ref goes with from: the repository to take it from", "ref")
        message = await self.sup.init_workspace(
            ws, body.get("template"), body.get("budget_s"), body.get("from"), body.get("ref")
        )
        self.set_status(201)
        self.finish({"path": api_path(self.sup.root, ws), "message": message})


def _next_tag(ws: Path) -> str | None:
    """free_tag, or None where it cannot be known (no git: GET status says so)."""
    try:
        return free_tag(ws)
    except (OSError, RuntimeError, subprocess.SubprocessError):
        return None


class RunsHandler(EngineStarter, BaseHandler):
    """`GET ?path=`: the runs of a workspace; `POST {path, …options}`: start the engine on it."""

    @tornado.web.authenticated
    async def get(self):
        ws = self.query_workspace()
        engine = self.sup.engine(ws)
        tags = run_tags(ws)
        if engine is not None and engine.tag not in tags:
            tags.insert(0, engine.tag)  # started, no journal yet
        runs = [await asyncio.to_thread(self.one_run, ws, tag, engine) for tag in tags]
        self.finish(
            {
                "path": api_path(self.sup.root, ws),
                "engine": engine.to_json() if engine else None,
                "last_failure": self.sup.failures.get(ws),
                "runs": runs,
                # What a Start without a tag would name the run (the engine's rule), for the panel to say first.
                "next_tag": await asyncio.to_thread(_next_tag, ws),
            }
        )

    @tornado.web.authenticated
    @answers_domain_errors
    async def post(self):
        await self.start(validate.body(self.request.body, validate.run_fields()))

    def one_run(self, ws: Path, tag: str, engine: EngineInfo | None) -> dict:
        """A run's summary (in a thread); a damaged one is reported for itself, not to hide the others."""
        try:
            return run_status(self.sup, ws, tag, engine)
        except JournalError as err:
            return {"tag": tag, "state": CORRUPT, "error": err.describe(self.sup.root)}
        except DomainError as err:
            # state.json unreadable and not rewritable (or no Node.js to rewrite it): the message says why.
            return {"tag": tag, "state": CORRUPT, "error": err.message}


class ResumeHandler(EngineStarter, BaseHandler):
    """`POST {path, tag?, …options}`: continue a run (the latest when no tag) with --resume."""

    @tornado.web.authenticated
    @answers_domain_errors
    async def post(self):
        opts = validate.body(self.request.body, validate.resume_fields())
        await self.start({**opts, "resume": True})


class StopHandler(BaseHandler):
    """`POST {path}`: SIGTERM to the engine's process group (a run's or a transfer study's); SIGKILL if it outlives the grace."""

    @tornado.web.authenticated
    @answers_domain_errors
    async def post(self):
        body = validate.body(self.request.body, validate.STOP_FIELDS)
        ws = self.workspace(body["path"])
        stopped = self.sup.stop(ws)
        self.set_status(202)
        self.finish({"path": api_path(self.sup.root, ws), "state": "stopping", **stopped})


class RunStatusHandler(BaseHandler):
    """`GET ?path=&tag=`: one run's state, engine, experiment in flight, counts, best and cost."""

    @tornado.web.authenticated
    @answers_domain_errors
    async def get(self):
        ws = self.query_workspace()
        tag = self.pick_tag(ws, self.get_query_argument("tag", None))
        self.records(ws, tag)  # a damaged journal is a 409 naming its line
        status = await asyncio.to_thread(run_status, self.sup, ws, tag, self.sup.engine(ws))
        self.finish({"path": api_path(self.sup.root, ws), **status})


# How many experiments one `GET experiments?n=` may name (the panel asks for those it renders).
MOST_BY_NUMBER = 200


class ExperimentsHandler(BaseHandler):
    """`GET ?path=&tag=&offset=&limit=`: experiment records in journal order, a page at a time;
    with `n=3,17,…`, those experiments (whole: the event stream's replay sends them light)."""

    @tornado.web.authenticated
    async def get(self):
        ws = self.query_workspace()
        offset = validate.query_int(self, "offset", 0, 0, 10**9)
        limit = validate.query_int(self, "limit", 50, 0, 1000)
        numbers = self.get_query_argument("n", None)
        wanted = None if numbers is None else set(validate.query_numbers("n", numbers, MOST_BY_NUMBER))
        tag = self.pick_tag(ws, self.get_query_argument("tag", None))
        exps = [r for r in self.records(ws, tag) if r["type"] == "experiment"]
        if wanted is not None:
            exps = [r for r in exps if r["n"] in wanted]
            offset, limit = 0, len(exps)
        self.finish(
            {
                "tag": tag,
                "total": len(exps),
                "offset": offset,
                "limit": limit,
                "experiments": exps[offset : offset + limit],
            }
        )


class ExportHandler(BaseHandler):
    """`POST {path, tag?}`: writes the run as `<tag>.ipynb` in the workspace (the engine's export)."""

    @tornado.web.authenticated
    @answers_domain_errors
    async def post(self):
        body = validate.body(self.request.body, validate.EXPORT_FIELDS)
        ws = self.workspace(body["path"])
        tag = self.pick_tag(ws, body.get("tag"))
        target = ws / f"{tag}.ipynb"
        text = await self.sup.export_text(ws, tag)
        notebook = nbformat.reads(text, as_version=4)
        # Written by the server itself (exclusive temp in .autoresearch/, renamed over whatever a run left
        # at the name), so what is signed below is exactly what was written, never a file a run put there.
        try:
            await asyncio.to_thread(replace_inside, target, ws, text.encode(), ws / STATE_DIR)
        except (OutsideError, IsADirectoryError) as err:
            raise FileInTheWay(
                f"cannot write {self.rel(target)}: {err.strerror if isinstance(err, IsADirectoryError) else err}; "
                "remove what is in its place and export again"
            ) from None
        experiments = sum(1 for c in notebook.cells if str(c.get("id", "")).startswith("experiment-"))
        message = f"wrote {target} (run {tag}, {experiments} experiments)"
        # Written here at the user's request: trusted, so it opens with its outputs as they were.
        # On the server's thread: its notary's SQLite connection belongs to it (a few ms a notebook).
        sign_node(notebook, self.contents_manager.notary)
        self.set_status(201)
        self.finish(
            {
                "path": api_path(self.sup.root, ws),
                "tag": tag,
                "notebook": self.rel(ws / f"{tag}.ipynb"),
                "message": message,
            }
        )


class LogHandler(BaseHandler):
    """`GET ?path=&tag=&n=&tail_bytes=`: the end of experiment n's training log."""

    @tornado.web.authenticated
    async def get(self):
        ws = self.query_workspace()
        tag = self.pick_tag(ws, self.get_query_argument("tag", None))
        if self.get_query_argument("n", None) is None:
            raise ApiError(400, "n is required", "n")
        n = validate.query_int(self, "n", 0, 0, 10**6)
        tail = validate.query_int(self, "tail_bytes", 65536, 1, 16 * 1024 * 1024)
        file = log_path(ws, tag, n)
        try:
            data, size = read_tail(file, ws / STATE_DIR, tail)
        except FileNotFoundError:
            raise ApiError(404, f"experiment {n} of run {tag} has no log", "n") from None
        except OutsideError:
            raise ApiError(403, f"experiment {n}'s log {self.outside(ws)}", "n") from None
        self.finish(
            {
                "tag": tag,
                "n": n,
                "path": self.rel(file),
                "size": size,
                "truncated": size > tail,
                "text": data.decode(errors="replace"),
            }
        )


def setup_route_handlers(web_app, root_dir: str | None = None, log=None, settings: Autoresearch | None = None) -> None:
    """Adds the autoresearch handlers to the server's tornado application (with `settings`, the
    server's Autoresearch config: its defaults when None)."""
    settings = settings or Autoresearch()
    if SUPERVISOR not in web_app.settings:
        root = root_dir or web_app.settings.get("server_root_dir") or os.getcwd()
        web_app.settings[SUPERVISOR] = Supervisor(os.path.expanduser(root), log=log, settings=settings)
    web_app.settings[POLL_MS] = round(settings.poll_interval_s * 1000)
    web_app.settings[LOG_BACKLOG_BYTES] = settings.log_backlog_bytes
    base_url = web_app.settings["base_url"]
    routes = {
        "status": StatusHandler,
        "workspaces": WorkspacesHandler,
        "runs": RunsHandler,
        "runs/stop": StopHandler,
        "runs/resume": ResumeHandler,
        "runs/status": RunStatusHandler,
        "runs/step": StepHandler,
        "review": ReviewHandler,
        "transfer": TransferHandler,
        "experiments": ExperimentsHandler,
        "log": LogHandler,
        "compare": CompareHandler,
        "export": ExportHandler,
        "events": EventsHandler,
    }
    handlers = [(url_path_join(base_url, "autoresearch", name), cls) for name, cls in routes.items()]
    web_app.add_handlers(".*$", handlers)
