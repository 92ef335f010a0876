"""The server extension's REST routes, all under `<base_url>/autoresearch/`."""

from __future__ import annotations

import asyncio

import tornado
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from .node import engine_path, find_node


class StatusHandler(APIHandler):
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


def setup_route_handlers(web_app) -> None:
    """Adds the autoresearch handlers to the server's tornado application."""
    base_url = web_app.settings["base_url"]
    handlers = [(url_path_join(base_url, "autoresearch", "status"), StatusHandler)]
    web_app.add_handlers(".*$", handlers)
