import pytest

pytest_plugins = ("pytest_jupyter.jupyter_server",)


@pytest.fixture
def jp_server_config(jp_server_config):
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyterlab_autoresearch": True},
            # Refuse any handler that forgot its auth decorator, as a locked-down server would.
            "allow_unauthenticated_access": False,
        }
    }


@pytest.fixture
def fake_node(tmp_path):
    """Writes an executable that answers `--version` like a Node.js of the given version."""

    def make(version: str) -> str:
        path = tmp_path / f"node-{version}"
        path.write_text(f"#!/bin/sh\necho {version}\n")
        path.chmod(0o755)
        return str(path)

    return make


# --- Engine, workspaces and the supervisor, for the API tests -------------------------------

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from jupyterlab_autoresearch.node import engine_path
from jupyterlab_autoresearch.supervise.run_options import OPTIONS_FILE

ROOT = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com"]

# A stand-in for train.py: sleeps instead of training and prints the summary block. Its metric
# depends on the constants the offline proposer tunes, so some experiments are kept.
STAND_IN = """\
import math, time
LEARNING_RATE = 0.001
N_LAYER = 4
SLEEP = {sleep}
print("step 1 | loss 3.2500", flush=True)
time.sleep(SLEEP)
print("---")
print("val_bpb:          %.6f" % (1.0 + (math.log2(LEARNING_RATE) - math.log2(0.004)) ** 2 * 0.01 + (N_LAYER - 6) ** 2 * 0.01))
print("training_seconds: 0.3")
print("peak_vram_mb:     10.0")
"""


@pytest.fixture(scope="session")
def engine_bundle():
    """The engine bundle and its option list, built once if this checkout has none."""
    if not engine_path().is_file() or not OPTIONS_FILE.is_file():
        subprocess.run(["node", str(ROOT / "scripts" / "build-engine.mjs")], cwd=ROOT, check=True, timeout=300)
    return engine_path()


def make_workspace(folder: Path, train: str | None = None, sleep: float = 0.3) -> Path:
    """A real workspace from the engine's `init --budget 1`, with a fast stand-in train.py committed."""
    subprocess.run(
        ["node", str(engine_path()), "init", str(folder), "--budget", "1"], check=True, capture_output=True, timeout=120
    )
    (folder / "train.py").write_text(train if train is not None else STAND_IN.format(sleep=sleep))
    subprocess.run([*GIT, "commit", "-qam", "fast stand-in train.py"], cwd=folder, check=True, timeout=60)
    return folder


def committed_workspace(ws: Path, train: str) -> Path:
    """A hand-made workspace in `ws`: a 1-second program.md, this train.py and a prepare.py, committed on main."""
    (ws / "program.md").write_text("---\nbudget_s: 1\ntimeout_s: 20\n---\nMake val_bpb lower.\n")
    (ws / "train.py").write_text(train)
    (ws / "prepare.py").write_text("TIME_BUDGET = 1\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ws, check=True, capture_output=True)
    subprocess.run([*GIT, "add", "-A"], cwd=ws, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-qm", "initial"], cwd=ws, check=True, capture_output=True)
    return ws


@pytest.fixture
def workspace(engine_bundle, jp_root_dir):
    """A workspace folder `ws` under the server root, ready to run."""
    return make_workspace(Path(jp_root_dir) / "ws")


@pytest.fixture
def supervisor(jp_serverapp):
    """The extension's supervisor, with short timers; engines left running are killed afterwards."""
    sup = jp_serverapp.web_app.settings["autoresearch_supervisor"]
    sup.stop_grace_s = 20.0
    sup.start_wait_s = 5.0  # the test machine may be busy: give refusals time to show
    jp_serverapp.web_app.settings["autoresearch_poll_ms"] = 100
    yield sup
    for engine in Path(sup.root).glob("**/.autoresearch/engine.json"):
        kill_engine(engine.parent.parent)
    for child in list(sup.children.values()):
        kill_group(child.proc.pid)
        child.proc.wait(timeout=10)
    sup.close()


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_engine(ws: Path) -> None:
    """SIGKILL for a workspace's engine and its training run, as a crash would do."""
    try:
        info = json.loads((ws / ".autoresearch" / "engine.json").read_text())
    except (OSError, ValueError):
        return
    for pgid in (info.get("run_pgid"), info.get("pid")):
        if pgid:
            kill_group(pgid)
            try:
                os.kill(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.fixture
def api(jp_fetch):
    """Calls a route with the token and returns (status, JSON body), errors included."""

    async def call(route: str, method: str = "GET", body=None, **params):
        kwargs = {"method": method, "raise_error": False, "params": {k: v for k, v in params.items() if v is not None}}
        if method != "GET":
            kwargs["body"] = body if isinstance(body, (str, bytes)) else json.dumps(body)
        response = await jp_fetch("autoresearch", *route.split("/"), **kwargs)
        return response.code, json.loads(response.body or b"null")

    return call


async def wait_for(predicate, timeout: float = 60.0, what: str = "condition", interval: float = 0.1):
    """Polls an (async or plain) predicate until it returns a truthy value, which is returned."""
    until = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > until:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(interval)


def journal(ws: Path, tag: str) -> list[dict]:
    """A run's journal records."""
    text = (ws / ".autoresearch" / tag / "journal.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def alive(pid: int) -> bool:
    """Whether pid is a live process (a zombie counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def git_status(ws: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def server_log(jp_serverapp):
    """What the server logs during a test, one string per record as a log file shows it (tracebacks included)."""
    import logging

    lines: list[str] = []
    seen: set[int] = set()

    class Keep(logging.Handler):
        def emit(self, record):
            if id(record) not in seen:  # tornado's loggers also propagate to the server's
                seen.add(id(record))
                lines.append(self.format(record))

    keep = Keep(level=logging.DEBUG)
    keep.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    loggers = [logging.getLogger("tornado"), jp_serverapp.log]
    for logger in loggers:
        logger.addHandler(keep)
    yield lines
    for logger in loggers:
        logger.removeHandler(keep)


# --- A long run's journal, past many pipe buffers -----------------------------------------------


def long_run_records(count: int, tag: str = "t1") -> list[dict]:
    """A finished run of `count` experiments (#0 the baseline, every tenth kept, every thirteenth a
    crash), as the engine's journal holds it: over 1 MB of notebook once exported at 2,000."""
    ts = "2026-11-30T00:00:00Z"
    experiments = []
    best = None
    for n in range(count):
        status = "keep" if n % 10 == 0 else "crash" if n % 13 == 0 else "discard"
        metric = None if status == "crash" else round(1 - n * 0.0001, 6)
        lr = f"{0.001 * (1 + n % 7):.4f}"
        experiments.append(
            {
                "type": "experiment",
                "ts": ts,
                "n": n,
                "parent_commit": "a" * 40,
                "commit": f"{n:x}".rjust(40, "b"),
                "description": f"experiment {n}: change LEARNING_RATE to {lr}",
                "rationale": f"because experiment {n - 1} suggested it",
                "diff": f"--- a/train.py\n+++ b/train.py\n@@ -1,3 +1,3 @@\n-LEARNING_RATE = 0.001\n+LEARNING_RATE = {lr}\n N_LAYER = 4\n",
                "lines_added": 1,
                "lines_removed": 1,
                "summary": {} if metric is None else {"val_bpb": metric},
                "metric": metric,
                "best_before": best,
                "delta": None if metric is None or best is None else metric - best,
                "status": status,
                "reason": "exited with code 1: RuntimeError: boom" if status == "crash" else None,
                "memory_gb": 2.0,
                "timings": {"propose_s": 1, "run_s": 300, "total_s": 301},
                "exit_code": 1 if status == "crash" else 0,
                "signal": None,
                "log_path": None,
                "log_truncated": False,
                "proposer": "baseline" if n == 0 else "offline",
                "usage": {
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
                "cost_usd": 0.0,
            }
        )
        if status == "keep":
            best = metric
    start = {
        "type": "run_start",
        "ts": ts,
        "tag": tag,
        "branch": f"autoresearch/{tag}",
        "resume": False,
        "base_commit": "a" * 40,
        "proposer": "offline",
        "seed": 0,
        "readonly_hashes": {},
        "engine_version": "0.1.0",
        "pid": 1,
        "config": {
            "metric": "val_bpb",
            "direction": "lower",
            "budget_s": 300,
            "timeout_s": 600,
            "run": "python train.py",
            "editable": ["train.py"],
            "readonly": [],
        },
    }
    kept = [e for e in experiments if e["status"] == "keep"]
    end = {
        "type": "run_end",
        "ts": ts,
        "reason": "stop",
        "message": None,
        "best_commit": kept[-1]["commit"],
        "best_metric": kept[-1]["metric"],
    }
    return [start, *experiments, end]


def write_long_run(ws: Path, count: int, tag: str = "t1") -> Path:
    """Writes run `tag` of workspace `ws` as a journal of `count` experiments; returns the journal."""
    journal_file = ws / ".autoresearch" / tag / "journal.jsonl"
    journal_file.parent.mkdir(parents=True, exist_ok=True)
    journal_file.write_text("".join(json.dumps(r) + "\n" for r in long_run_records(count, tag)))
    return journal_file
