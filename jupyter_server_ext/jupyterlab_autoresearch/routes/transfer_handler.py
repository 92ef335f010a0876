"""The transfer study's REST route, `autoresearch/transfer`: start one on a run (detached, like an
engine; POST runs/stop stops it), and where it stands (running, its summary, its defaults)."""

from __future__ import annotations

import asyncio

import tornado

from ..read import study
from ..read.workspaces import api_path, transfer_log_path
from ..supervise.starter import EngineStarter, check_executor
from . import validate
from .base_handler import BaseHandler
from .web_errors import answers_domain_errors


class TransferHandler(EngineStarter, BaseHandler):
    """`POST {path, tag?, env?, budget_s?, runs?, ablate?, kernel?, executor?}`: start the study of a run
    (executor slurm: each replay a Slurm job);
    `GET ?path=&tag=`: {tag, running, summary, defaults, failure, log}."""

    @tornado.web.authenticated
    @answers_domain_errors
    async def post(self):
        opts = validate.body(self.request.body, validate.transfer_fields())
        ws = self.workspace(opts.pop("path"))
        tag = self.pick_tag(ws, opts.pop("tag", None))
        check_executor(opts)
        if "kernel" in opts:
            opts.update(await self.kernel_executor(opts.pop("kernel")))
        started = await self.sup.start_transfer(ws, tag, study.study_flags(opts), opts)
        self.set_status(202)
        self.finish({"path": api_path(self.sup.root, ws), **started})

    @tornado.web.authenticated
    @answers_domain_errors
    async def get(self):
        ws = self.query_workspace()
        tag = self.pick_tag(ws, self.get_query_argument("tag", None))
        engine = self.sup.engine(ws)
        summary = await asyncio.to_thread(study.summary, ws, tag)
        defaults, problem = await asyncio.to_thread(study.defaults, ws)
        failure = self.sup.study_failures.get(ws)
        log = transfer_log_path(ws, tag)
        self.finish(
            {
                "tag": tag,
                "running": engine is not None and engine.kind == "transfer" and engine.tag == tag,
                "summary": summary,
                "defaults": defaults,
                # Why program.md's transfer block could not be read (a front matter error), or null.
                "defaults_problem": problem,
                "failure": (
                    {"message": failure["message"], "exit_code": failure["exit_code"]}
                    if failure is not None and failure["tag"] == tag
                    else None
                ),
                "log": api_path(self.sup.root, log) if log.exists() else None,
            }
        )
