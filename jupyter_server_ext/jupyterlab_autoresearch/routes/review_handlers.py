"""Step mode's REST routes: the proposal awaiting review and the panel's decision on it
(`autoresearch/review`), and switching step mode while a run goes on (`autoresearch/runs/step`)."""

from __future__ import annotations

import asyncio

import tornado

from ..read import review_files
from ..read.run_state import load_state
from . import validate
from .base_handler import BaseHandler
from .web_errors import answers_domain_errors


class ReviewHandler(BaseHandler):
    """`GET ?path=&tag=`: the proposal awaiting review, as the engine wrote it (`pending` null when
    none does: a normal state, not an error); `POST {path, tag?, n, decision, note?, all?, files?}`:
    the panel's decision on it."""

    @tornado.web.authenticated
    @answers_domain_errors
    async def get(self):
        ws = self.query_workspace()
        tag = self.pick_tag(ws, self.get_query_argument("tag", None))
        # None: nothing awaits review (yet, or any more). The panel asks around a proposal's offer
        # and decision, so this is an answer, not a 404 in the browser's console.
        pending = await asyncio.to_thread(review_files.read_pending, ws, tag)
        engine = self.sup.engine(ws)
        # live: an engine waits for the decision now (else it is taken on --resume).
        self.finish({"tag": tag, "live": engine is not None and engine.runs(tag), "pending": pending})

    @tornado.web.authenticated
    @answers_domain_errors
    async def post(self):
        body = validate.body(self.request.body, validate.REVIEW_FIELDS, validate.MAX_REVIEW_BODY)
        ws = self.workspace(body["path"])
        tag = self.pick_tag(ws, body.get("tag"))
        decided = await asyncio.to_thread(review_files.decide, ws, tag, self.sup.engine(ws), body)
        self.set_status(202)
        self.finish(decided)


class StepHandler(BaseHandler):
    """`POST {path, tag?, step}`: step mode on or off for the run an engine is running; from its next proposal on."""

    @tornado.web.authenticated
    @answers_domain_errors
    async def post(self):
        body = validate.body(self.request.body, validate.STEP_FIELDS)
        ws = self.workspace(body["path"])
        tag = self.pick_tag(ws, body.get("tag"))
        engine = self.sup.engine(ws)
        live = engine is not None and engine.runs(tag)
        state = await asyncio.to_thread(load_state, ws, tag, live) if live else {}
        self.finish(await asyncio.to_thread(review_files.set_step, ws, tag, engine, body["step"], state))
