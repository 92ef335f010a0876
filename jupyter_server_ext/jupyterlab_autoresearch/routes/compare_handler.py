"""`GET autoresearch/compare?path=&tag=&a=&b=`: two experiments of a run side by side (compare.py)."""

from __future__ import annotations

import asyncio

import tornado

from ..errors import DomainError, NotFound
from ..read.compare import compare
from ..read.run_state import load_state
from . import validate
from .base_handler import BaseHandler
from .validate import ApiError
from .web_errors import answers_domain_errors

# The highest experiment number asked for, as the log route bounds it.
MAX_N = 10**6


class CompareHandler(BaseHandler):
    """`GET ?path=&tag=&a=<n|best>&b=<n|best>`: both records, the run's metric, direction, editable
    files and best, and the diff between the two experiments' code (null with a reason when it
    cannot be had)."""

    @tornado.web.authenticated
    @answers_domain_errors
    async def get(self):
        ws = self.query_workspace()
        tag = self.pick_tag(ws, self.get_query_argument("tag", None))
        raw = {name: self.experiment_arg(name) for name in ("a", "b")}
        records = self.records(ws, tag)  # a damaged journal is a 409 naming its line
        best = await asyncio.to_thread(self.best_n, ws, tag, "best" in raw.values())
        numbers = {}
        for name, value in raw.items():
            if value == "best":
                if best is None:
                    raise NotFound(f"run {tag} has no best yet: no experiment has been kept", name)
                value = best
            numbers[name] = value
        self.finish(await asyncio.to_thread(compare, ws, tag, records, numbers["a"], numbers["b"], best))

    def experiment_arg(self, name: str) -> int | str:
        """An experiment number, or `best`; a 400 naming the argument otherwise."""
        raw = self.get_query_argument(name, None)
        if raw is None:
            raise ApiError(400, f"{name} is required: an experiment number, or best", name)
        if raw == "best":
            return raw
        return validate.query_int(self, name, 0, 0, MAX_N)

    def best_n(self, ws, tag: str, needed: bool) -> int | None:
        """The run's best experiment as the engine derives it (state.json's, the one interpreter);
        None when there is none, or when state.json cannot be had and nothing asked for the best."""
        engine = self.sup.engine(ws)
        try:
            state = load_state(ws, tag, engine is not None and engine.runs(tag))
        except DomainError:
            if needed:
                raise
            return None
        return state["best"]["n"] if state.get("best") else None
