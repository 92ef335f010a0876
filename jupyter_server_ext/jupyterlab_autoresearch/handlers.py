"""The server extension's REST routes, all under `<base_url>/autoresearch/`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import tornado
from jupyter_core.utils import ensure_async
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from . import validate
from .confine import OutsideError, inside, read_tail
from .journal import JournalError, read_journal
from .node import engine_path, find_node
from .runs import run_status
from .supervisor import Supervisor, SupervisorError, server_url
from .validate import ApiError
from .workspaces import (
    STATE_DIR,
    PathError,
    api_path,
    find_workspaces,
    journal_path,
    log_path,
    resolve,
    run_tags,
)

SUPERVISOR = "autoresearch_supervisor"
# A file of a run that a symlink (or a FIFO) puts out of reach: what the client is told.
OUTSIDE_MESSAGE = (
    "resolves outside {folder} or is not a regular file (a symlink or a FIFO left there, perhaps by a training run); "
    "the server serves nothing outside a workspace's .autoresearch folder: remove it"
)


class WorkspaceLookup:
    """Finding the workspace, run and journal a request names; shared by REST and WebSocket handlers."""

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
        if tag is not None:
            validate.tag("tag", tag)
            engine = self.sup.engine(ws)
            journal = journal_path(ws, tag)
            if journal.exists() and not inside(journal, ws / STATE_DIR):
                raise ApiError(
                    403, f"run {tag}'s journal {OUTSIDE_MESSAGE.format(folder=self.rel(ws / STATE_DIR))}", "tag"
                )
            if not journal.exists() and not (engine and engine.tag == tag):
                raise ApiError(404, f"no run tagged {validate.show(tag)} in {self.rel(ws)}", "tag")
            return tag
        engine = self.sup.engine(ws)
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

    def rel(self, path: Path) -> str:
        return api_path(self.sup.root, path) or "/"


class JsonErrors:
    """Refusals as JSON bodies of {message, field}, for the REST routes and the WebSocket's upgrade alike."""

    def write_error(self, status_code: int, **kwargs) -> None:
        error = (kwargs.get("exc_info") or (None, None))[1]
        if isinstance(error, ApiError):
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"message": error.message, "field": error.field}))
        else:
            super().write_error(status_code, **kwargs)


class BaseHandler(JsonErrors, WorkspaceLookup, APIHandler):
    """A REST route whose errors are JSON bodies of {message, field}."""


class StatusHandler(BaseHandler):
    """`GET /autoresearch/status`: the package version, the engine bundle and the host's Node.js."""

    @tornado.web.authenticated
    async def get(self):
        from . import __version__

        # `node --version` is a subprocess: keep it off the event loop.
        node = await asyncio.to_thread(find_node)
        engine = engine_path()
        self.finish(
            {
                "version": __version__,
                "engine": {"path": str(engine), "exists": engine.is_file()},
                "node": node.to_json(),
            }
        )


class WorkspacesHandler(BaseHandler):
    """`GET`: workspaces under the root with their runs; `POST {path, template?, budget_s?}`: create one."""

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
    async def post(self):
        body = validate.body(self.request.body, validate.WORKSPACE_FIELDS)
        ws = self.workspace(body["path"], must_exist=False)
        if ws == self.sup.root:
            raise ApiError(400, "path: name a new folder, not the server's root", "path")
        try:
            message = await self.sup.init_workspace(ws, body.get("template", "tiny-cpu"), body.get("budget_s"))
        except SupervisorError as err:
            raise ApiError(err.status, err.message, "path" if err.status == 400 else None) from None
        self.set_status(201)
        self.finish({"path": api_path(self.sup.root, ws), "message": message})


class EngineStarter:
    """Starting the engine for a request: shared by POST runs and POST runs/resume (and only them)."""

    async def start(self, opts: dict) -> None:
        """Starts the engine on opts' workspace; answers 202 with its pid, tag and log."""
        ws = self.workspace(opts.pop("path"))
        if "kernel" in opts:
            opts.update(await self.kernel_executor(opts.pop("kernel")))
        try:
            started = await self.sup.start(ws, opts)
        except SupervisorError as err:
            raise ApiError(err.status, err.message) from None
        self.set_status(202)
        self.finish({"path": api_path(self.sup.root, ws), **started})

    async def kernel_executor(self, name: str) -> dict:
        """Options that train in a kernel of `name` started through this very server, so local and
        gateway (remote) kernels alike; the engine reaches the server on loopback with its token."""
        try:
            spec = await ensure_async(self.kernel_spec_manager.get_kernel_spec(name))
        except Exception:
            raise ApiError(400, f"kernel: no kernelspec named {validate.show(name)}", "kernel") from None
        # A local spec is a KernelSpec; a gateway's is its JSON model.
        model = spec.get("spec", {}) if isinstance(spec, dict) else {"language": spec.language, "argv": spec.argv}
        if (model.get("language") or "").lower() != "python":
            raise ApiError(
                400, f"kernel: {validate.show(name)} is not a Python kernel; the engine's runner is Python", "kernel"
            )
        app = self.serverapp
        if app.sock:
            raise ApiError(
                400,
                "kernel: this server listens on a Unix socket, which the engine cannot use; run it on a TCP port",
                "kernel",
            )
        opts = {
            "kernel": name,
            "server_url": server_url(app.ip, app.port, app.base_url, bool(app.certfile)),
            "jupyter_token": app.identity_provider.token,
        }
        # The syntax check of a proposal uses the kernel's interpreter when it is on this host.
        exe = (model.get("argv") or [""])[0]
        found = exe if os.path.isabs(exe) else shutil.which(exe) if exe else None
        if found and os.access(found, os.X_OK) and not isinstance(spec, dict):
            opts["python"] = found
        return opts


class RunsHandler(EngineStarter, BaseHandler):
    """`GET ?path=`: the runs of a workspace; `POST {path, …options}`: start the engine on it."""

    @tornado.web.authenticated
    async def get(self):
        ws = self.query_workspace()
        engine = self.sup.engine(ws)
        tags = run_tags(ws)
        if engine is not None and engine.tag not in tags:
            tags.insert(0, engine.tag)  # started, no journal yet
        runs = []
        for tag in tags:
            try:
                runs.append(run_status(self.sup, ws, tag))
            except JournalError as err:
                # One damaged journal should not hide the other runs.
                runs.append({"tag": tag, "state": "corrupt", "error": err.describe(self.sup.root)})
        self.finish(
            {
                "path": api_path(self.sup.root, ws),
                "engine": engine.to_json() if engine else None,
                "last_failure": self.sup.failures.get(ws),
                "runs": runs,
            }
        )

    @tornado.web.authenticated
    async def post(self):
        await self.start(validate.body(self.request.body, validate.run_fields()))


class ResumeHandler(EngineStarter, BaseHandler):
    """`POST {path, tag?, …options}`: continue a run (the latest when no tag) with --resume."""

    @tornado.web.authenticated
    async def post(self):
        opts = validate.body(self.request.body, validate.resume_fields())
        await self.start({**opts, "resume": True})


class StopHandler(BaseHandler):
    """`POST {path}`: SIGTERM to the engine's process group; SIGKILL if it outlives the grace."""

    @tornado.web.authenticated
    async def post(self):
        body = validate.body(self.request.body, validate.STOP_FIELDS)
        ws = self.workspace(body["path"])
        try:
            stopped = self.sup.stop(ws)
        except SupervisorError as err:
            raise ApiError(err.status, err.message) from None
        self.set_status(202)
        self.finish({"path": api_path(self.sup.root, ws), "state": "stopping", **stopped})


class RunStatusHandler(BaseHandler):
    """`GET ?path=&tag=`: one run's state, engine, experiment in flight, counts, best and cost."""

    @tornado.web.authenticated
    async def get(self):
        ws = self.query_workspace()
        tag = self.pick_tag(ws, self.get_query_argument("tag", None))
        self.finish({"path": api_path(self.sup.root, ws), **run_status(self.sup, ws, tag, self.records(ws, tag))})


class ExperimentsHandler(BaseHandler):
    """`GET ?path=&tag=&offset=&limit=`: experiment records in journal order, a page at a time."""

    @tornado.web.authenticated
    async def get(self):
        ws = self.query_workspace()
        offset = validate.query_int(self, "offset", 0, 0, 10**9)
        limit = validate.query_int(self, "limit", 50, 0, 1000)
        tag = self.pick_tag(ws, self.get_query_argument("tag", None))
        exps = [r for r in self.records(ws, tag) if r["type"] == "experiment"]
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
    async def post(self):
        body = validate.body(self.request.body, validate.EXPORT_FIELDS)
        ws = self.workspace(body["path"])
        tag = self.pick_tag(ws, body.get("tag"))
        try:
            message = await self.sup.export_run(ws, tag)
        except SupervisorError as err:
            raise ApiError(err.status, err.message) from None
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
            raise ApiError(
                403, f"experiment {n}'s log {OUTSIDE_MESSAGE.format(folder=self.rel(ws / STATE_DIR))}", "n"
            ) from None
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


def setup_route_handlers(web_app, root_dir: str | None = None, log=None) -> None:
    """Adds the autoresearch handlers to the server's tornado application."""
    from .stream import EventsHandler

    if SUPERVISOR not in web_app.settings:
        root = root_dir or web_app.settings.get("server_root_dir") or os.getcwd()
        web_app.settings[SUPERVISOR] = Supervisor(os.path.expanduser(root), log=log)
    base_url = web_app.settings["base_url"]
    routes = {
        "status": StatusHandler,
        "workspaces": WorkspacesHandler,
        "runs": RunsHandler,
        "runs/stop": StopHandler,
        "runs/resume": ResumeHandler,
        "runs/status": RunStatusHandler,
        "experiments": ExperimentsHandler,
        "log": LogHandler,
        "export": ExportHandler,
        "events": EventsHandler,
    }
    handlers = [(url_path_join(base_url, "autoresearch", name), cls) for name, cls in routes.items()]
    web_app.add_handlers(".*$", handlers)
