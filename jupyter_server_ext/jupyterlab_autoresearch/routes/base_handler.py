"""The base of the REST routes: JSON errors, and the request's workspace, run and journal."""

from __future__ import annotations

from jupyter_server.base.handlers import APIHandler

from .lookup import WorkspaceLookup
from .web_errors import JsonErrors


class BaseHandler(JsonErrors, WorkspaceLookup, APIHandler):
    """A REST route whose errors are JSON bodies of {message, field}."""
