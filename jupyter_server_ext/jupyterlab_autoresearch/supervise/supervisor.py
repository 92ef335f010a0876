"""Starting, finding and stopping engine processes; all state lives in the workspaces' files."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tornado.ioloop import IOLoop, PeriodicCallback

from ..confine import write_inside
from ..errors import BadRequest, EngineFailed, EngineRunning, NoEngine, Unavailable
from ..read.workspaces import (
    JOURNAL_FILE,
    STATE_DIR,
    STOP_FILE,
    engine_file_path,
    engine_log_path,
    free_tag,
    journal_path,
    run_tags,
    transfer_log_path,
    transfer_path,
)
from ..server_config import Autoresearch
from . import procid
from .engine_commands import engine_command, export_notebook_text, usable_engine
from .engine_info import EngineInfo, is_engine_process, read_engine_info
from .engine_output import failure_message, run_started
from .run_options import MissingOptions, engine_flags
from .secrets import split_secrets
from .spawn import spawn_detached

# The record an engine command writes once its checks have passed, in the journal it keeps.
START_RECORD = {"run": "run_start", "transfer": "study_start"}


@dataclass
class Child:
    """An engine this server started (a run's, or a transfer study): reaped when it exits, its error kept if it failed."""

    proc: subprocess.Popen
    tag: str
    started: str
    log: Path
    log_offset: int
    kind: str = "run"


class Supervisor:
    """The server's view of engine processes: one per workspace, found again after a restart."""

    def __init__(self, root: str | Path, log=None, settings: Autoresearch | None = None):
        self.root = Path(os.path.realpath(root))
        self.log = log
        # The server's Autoresearch settings (server_config.py), which say what each timer is for.
        settings = settings or Autoresearch()
        self.stop_grace_s = settings.stop_grace_s
        self.start_wait_s = settings.start_wait_s
        self.clone_timeout_s = settings.clone_timeout_s
        # Engines this server started, so they are reaped (not left as zombies) once they exit.
        self.children: dict[Path, Child] = {}
        # An engine that failed after start() stopped waiting leaves no journal: keep its message
        # (a transfer study's apart, so a run's last failure is its own).
        self.failures: dict[Path, dict] = {}
        self.study_failures: dict[Path, dict] = {}
        self._escalations: dict[Path, object] = {}
        self._reaper: PeriodicCallback | None = None

    def reap(self) -> None:
        """Collects the exit status of children that ended."""
        for ws, child in list(self.children.items()):
            code = child.proc.poll()
            if code is not None:
                del self.children[ws]
                if code != 0:
                    (self.failures if child.kind == "run" else self.study_failures)[ws] = {
                        "tag": child.tag,
                        "exit_code": code,
                        "message": failure_message(child.log, child.log_offset, code),
                        "started": child.started,
                    }

    def engine(self, ws: Path) -> EngineInfo | None:
        """The live engine on a workspace (ours or started elsewhere), or None."""
        self.reap()
        info = read_engine_info(ws)
        child = self.children.get(ws)
        if info is not None and (self._ours(ws, info.pid) or is_engine_process(info, ws)):
            return info
        if child is not None:
            # Ours, still before its lock (engine.json) is written.
            return EngineInfo(child.proc.pid, child.tag, child.started, None, kind=child.kind)
        return None

    def _ours(self, ws: Path, pid: int) -> bool:
        """Whether pid is the engine this server started on ws and has not reaped: its number
        cannot have been reused, whatever engine.json says (or does not say) of it."""
        child = self.children.get(ws)
        return child is not None and child.proc.pid == pid and child.proc.poll() is None

    def stopping(self, ws: Path) -> bool:
        """Whether a stop was requested of the engine now running on the workspace."""
        return (ws / STATE_DIR / STOP_FILE).exists()

    async def start(self, ws: Path, opts: dict) -> dict:
        """Spawns `node <bundle> run <ws> …` detached from the server; returns {pid, tag, log}."""
        self._refuse_if_running(ws)
        node, bundle = await asyncio.to_thread(usable_engine)
        tag = opts.get("tag")
        if tag is None and opts.get("resume"):
            tags = run_tags(ws)
            if not tags:
                raise BadRequest(f"there is no run to resume in {self._rel(ws)}; start one first")
            tag = tags[0]
        elif tag is None:
            tag = await asyncio.to_thread(free_tag, ws)
        try:
            argv = [node, str(bundle), "run", str(ws), *self._flags({**opts, "tag": tag})]
        except MissingOptions as err:
            raise Unavailable(str(err)) from None
        return await self._launch(ws, "run", tag, argv, opts, engine_log_path(ws, tag), journal_path(ws, tag))

    async def start_transfer(self, ws: Path, tag: str, flags: list[str], opts: dict) -> dict:
        """Spawns `node <bundle> transfer <ws> --tag <tag> …` (a transfer study of run `tag`) as an engine is."""
        self._refuse_if_running(ws)
        node, bundle = await asyncio.to_thread(usable_engine)
        argv = [node, str(bundle), "transfer", str(ws), "--tag", tag, *flags]
        journal = transfer_path(ws, tag, JOURNAL_FILE)
        return await self._launch(ws, "transfer", tag, argv, opts, transfer_log_path(ws, tag), journal)

    def _refuse_if_running(self, ws: Path) -> None:
        running = self.engine(ws)
        if running is not None:
            then = "wait until it has stopped" if self.stopping(ws) else "stop it first"
            what = "a transfer study" if running.kind == "transfer" else "an engine"
            raise EngineRunning(
                f"{what} is already running on {self._rel(ws)} (pid {running.pid}, run {running.tag}); {then}"
            )

    async def _launch(
        self, ws: Path, kind: str, tag: str, argv: list[str], opts: dict, log_file: Path, journal: Path
    ) -> dict:
        """Starts the engine command `argv` (its output to log_file) and waits up to start_wait_s for
        its start record in `journal` (run_start, study_start) or its refusal."""
        journal_size = journal.stat().st_size if journal.exists() else 0
        self._forget_stop_request(ws)
        proc, started, log_offset = spawn_detached(
            argv, ws, self._env(), log_file, self._rel, secrets=self._secrets(opts)
        )
        self.children[ws] = Child(proc, tag, started, log_file, log_offset, kind)
        (self.failures if kind == "run" else self.study_failures).pop(ws, None)
        self._ensure_reaper()
        # Most refusals (front matter, dirty tree, existing branch) come within a second: relay them.
        deadline = time.monotonic() + self.start_wait_s
        while time.monotonic() < deadline:
            if proc.poll() is not None or run_started(journal, journal_size, proc.pid, START_RECORD[kind]):
                break
            await asyncio.sleep(0.1)
        code = proc.poll()
        if code is not None and code != 0:
            self.children.pop(ws, None)
            message = failure_message(log_file, log_offset, code)
            # Refused because another engine (one started from a shell, say) holds the
            # workspace: what the workspace's state says, not what the message's words do.
            if self.engine(ws) is not None:
                raise EngineRunning(message)
            raise (EngineFailed if code == 2 else BadRequest)(message)
        return {"pid": proc.pid, "tag": tag, "log": self._rel(log_file), "exit_code": code}

    @staticmethod
    def _in_kernel(opts: dict) -> bool:
        """Whether the run trains through a kernel: a fresh one of a kernelspec, or one attached by id."""
        return opts.get("kernel") is not None or opts.get("kernel_id") is not None

    @staticmethod
    def _flags(opts: dict) -> list[str]:
        """The engine's flags for the run options in opts (src/core/config/run-options.ts says which and how)."""
        if Supervisor._in_kernel(opts):
            # The token travels on the engine's secrets pipe, never in argv, which ps shows to all.
            opts = {**opts, "executor": "kernel"}
        # Otherwise the client's executor (slurm, subprocess), or none: the engine's own choice.
        return engine_flags(opts)

    @staticmethod
    def _env() -> dict[str, str]:
        """The engine's environment: the server's without its secrets (they go on a pipe: _secrets)."""
        return split_secrets(os.environ)[0]

    @staticmethod
    def _secrets(opts: dict) -> dict[str, str]:
        """What the engine is handed on its secrets pipe: the server's secret variables (the
        proposer's key), and the token of the server its kernels run through."""
        secrets = split_secrets(os.environ)[1]
        if Supervisor._in_kernel(opts):
            secrets["JUPYTER_TOKEN"] = opts.get("jupyter_token") or ""
        return secrets

    def stop(self, ws: Path) -> dict:
        """SIGTERM to the engine now; SIGKILL to its group after the grace if it still runs. Does not wait."""
        info = self.engine(ws)
        if info is None:
            raise NoEngine(f"no engine is running on {self._rel(ws)}")
        # The engine records a stop (not a signal) when this file is there as SIGTERM arrives.
        # Whatever is in its place goes first: a symlink left there is removed, never written through.
        stop_file = ws / STATE_DIR / STOP_FILE
        try:
            stop_file.unlink(missing_ok=True)
            write_inside(stop_file, ws / STATE_DIR, str(int(time.time() * 1000)).encode())
        except OSError as err:
            # The stop goes ahead: the engine then records it as a signal, not as a stop.
            if self.log:
                self.log.warning(
                    "autoresearch: cannot write %s (%s); stopping the engine all the same", self._rel(stop_file), err
                )
        # SIGTERM to the engine alone: one to its group would also kill the git commands it needs
        # to stop cleanly (reset to the best commit, journal the end); the training run has its
        # own group, which the engine kills itself. An engine started from a shell shares the
        # shell's group, which must not be signalled at all.
        if not self._signal(ws, info, signal.SIGTERM):
            raise NoEngine(f"no engine is running on {self._rel(ws)} (it has just ended)")
        if ws not in self._escalations:
            self._escalations[ws] = IOLoop.current().call_later(self.stop_grace_s, self._escalate, ws, info.pid)
        return {"pid": info.pid, "tag": info.tag, "signal": "SIGTERM", "grace_s": self.stop_grace_s}

    def _signal(self, ws: Path, info: EngineInfo, sig: int) -> bool:
        """Signals the engine engine.json records, only while it is still that process; True when sent."""
        if self._ours(ws, info.pid):
            self.children[ws].proc.send_signal(sig)
            return True
        return procid.signal_if_same(info.pid, info.identity, sig)

    def _escalate(self, ws: Path, pid: int) -> None:
        """SIGKILL for an engine that outlived its grace, and for the training runs it left behind."""
        self._escalations.pop(ws, None)
        info = self.engine(ws)
        if info is None or info.pid != pid:
            return  # it ended (or another engine holds the workspace now)
        if self.log:
            self.log.warning(
                "autoresearch: engine %s outlived SIGTERM by %s s; sending SIGKILL", pid, self.stop_grace_s
            )
        try:
            leads = os.getpgid(pid) == pid
        except (ProcessLookupError, PermissionError):
            leads = False
        if leads:
            # Our engines lead their own group (checked just above to be the engine): a kill
            # takes its git and syntax-check children too.
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        else:
            self._signal(ws, info, signal.SIGKILL)
        # Each training run has its own group, which only the engine would have killed (one per
        # worker with several). A group is killed only while led by the process recorded for it:
        # a number from an old engine.json may name anyone's group by now.
        for pgid in info.run_groups():
            if procid.group_leader_is(pgid, info.run_identities.get(pgid)):
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            elif self.log and procid.exists(pgid):
                # Silent when the group is simply gone (its guard ended it when the engine died).
                self.log.warning(
                    "autoresearch: not killing process group %s named in %s: it is not the training run recorded there",
                    pgid,
                    self._rel(engine_file_path(ws)),
                )
        self._forget_stop_request(ws)
        IOLoop.current().call_later(0.5, self.reap)

    def _forget_stop_request(self, ws: Path) -> None:
        # A leftover request would turn the next engine's Ctrl-C into a recorded 'stop'.
        (ws / STATE_DIR / STOP_FILE).unlink(missing_ok=True)

    def _ensure_reaper(self) -> None:
        if self._reaper is None:
            self._reaper = PeriodicCallback(self.reap, 2000)
            self._reaper.start()

    def close(self) -> None:
        """Stops the timers; engines keep running (they outlive the server by design)."""
        if self._reaper is not None:
            self._reaper.stop()
            self._reaper = None
        for handle in self._escalations.values():
            IOLoop.current().remove_timeout(handle)
        self._escalations.clear()

    async def init_workspace(
        self, ws: Path, template: str | None, budget_s: int | None, source: str | None = None, ref: str | None = None
    ) -> str:
        """Runs the engine's `init` (from a template, or `--from` a repository); returns its report
        or raises with its one-line error."""
        args = ["init", str(ws)]
        if source is not None:
            args += ["--from", source, *(["--ref", ref] if ref is not None else [])]
        else:
            args += ["--template", template or "tiny-cpu"]
        if budget_s is not None:
            args += ["--budget", str(budget_s)]
        try:
            # A clone may fetch a large history over the network: more time than a template needs.
            timeout_s = self.clone_timeout_s if source else 120
            return await asyncio.to_thread(engine_command, args, self.root, timeout_s)
        except BadRequest as err:
            # The folder given is what a template's init refuses; a clone's refusals are mostly about the source.
            field = "path" if source is None or "not empty" in err.message else "from"
            raise BadRequest(err.message, field) from None

    async def export_text(self, ws: Path, tag: str) -> str:
        """The run as the engine exports it: the notebook's JSON text, written by the caller."""
        return await asyncio.to_thread(export_notebook_text, ws, tag)

    def _rel(self, path: Path) -> str:
        try:
            rel = path.relative_to(self.root).as_posix()
            return rel if rel != "." else "/"
        except ValueError:
            return str(path)
