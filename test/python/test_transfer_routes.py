"""The transfer study through the server: POST/GET autoresearch/transfer on a real jupyter server,
the bundled engine's study of a real run (offline proposer, real git), its refusals and its stop."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import GIT, alive, wait_for
from jupyterlab_autoresearch.node import engine_path
from jupyterlab_autoresearch.supervise.supervisor import Supervisor
from rest_conformance import conforms

# Deterministic; deeper at AUTORESEARCH_SCALE=2; SLOW seconds of sleep, to have a study to stop.
TRAIN = """import os, time
LEARNING_RATE = 0.001
N_LAYER = 4
scale = float(os.environ.get("AUTORESEARCH_SCALE", "1"))
time.sleep(float(os.environ.get("SLOW", "0")))
print("---")
print("val_bpb:          %.6f" % (1.0 - 0.1 * (scale - 1) + abs(LEARNING_RATE - 0.004) * scale + abs(N_LAYER - 6) * 0.01))
"""
PROGRAM = "---\nbudget_s: 1\ntimeout_s: 20\n---\nMake val_bpb lower.\n"
WITH_DEFAULTS = "---\nbudget_s: 1\ntimeout_s: 20\ntransfer:\n  env:\n    AUTORESEARCH_SCALE: 2\n  budget_s: 2\n---\nMake val_bpb lower.\n"


@pytest.fixture
def studied(engine_bundle, jp_root_dir):
    """A workspace `ws` under the server root with a finished run t1 that kept some changes."""
    ws = Path(jp_root_dir) / "ws"
    ws.mkdir()
    (ws / "program.md").write_text(PROGRAM)
    (ws / "train.py").write_text(TRAIN)
    (ws / "prepare.py").write_text("TIME_BUDGET = 1\n")
    (ws / ".gitignore").write_text(".autoresearch/\nresults.tsv\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ws, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*GIT, "commit", "-qm", "initial"], cwd=ws, check=True)
    run = [shutil.which("node"), str(engine_path()), "run", str(ws), "--tag", "t1", "--max-experiments", "3"]
    subprocess.run([*run, "--proposer", "offline", "--python", sys.executable], check=True, capture_output=True)
    return ws


async def test_a_study_from_the_panel(studied, supervisor, api):
    code, status = await api("transfer", path="ws")
    assert code == 200, status
    conforms("transfer", status)
    assert status == {
        "tag": "t1",
        "running": False,
        "summary": None,
        "defaults": {"env": {}, "budget_s": None},
        "defaults_problem": None,
        "failure": None,
        "log": None,
    }
    # No scale named, none in program.md: the engine's refusal, relayed.
    code, refused = await api("transfer", "POST", {"path": "ws", "runs": 2})
    assert code == 400 and "name the larger scale" in refused["message"]
    # The same refusal after the server stopped waiting: kept, and GET transfer shows it.
    supervisor.start_wait_s = 0
    code, started = await api("transfer", "POST", {"path": "ws", "runs": 2})
    assert code == 202 and started["exit_code"] is None, started

    async def failed():
        code, status = await api("transfer", path="ws")
        return status["failure"]

    failure = await wait_for(failed, timeout=30, what="the study's failure")
    assert failure["exit_code"] == 1 and "name the larger scale" in failure["message"]
    code, runs = await api("runs", path="ws")
    assert runs["last_failure"] is None  # a study's failure is not the run's
    supervisor.start_wait_s = 5.0

    # The defaults follow program.md as it is now.
    (studied / "program.md").write_text(WITH_DEFAULTS)
    code, status = await api("transfer", path="ws", tag="t1")
    assert status["defaults"] == {"env": {"AUTORESEARCH_SCALE": "2"}, "budget_s": 2}

    # A slow study, to stop: POST runs/stop stops a study as it does a run.
    body = {"path": "ws", "env": {"AUTORESEARCH_SCALE": "2", "SLOW": "30"}, "runs": 2}
    code, started = await api("transfer", "POST", body)
    assert code == 202, started
    assert started["tag"] == "t1" and alive(started["pid"]) and started["log"] == "ws/.autoresearch/transfer-t1.log"
    conforms("transfer_started", started)
    code, runs = await api("runs", path="ws")
    assert runs["engine"]["kind"] == "transfer" and runs["engine"]["pid"] == started["pid"]
    code, status = await api("transfer", path="ws")
    assert status["running"] is True and status["log"] == started["log"]
    conforms("transfer", status)
    code, again = await api("transfer", "POST", body)
    assert code == 409 and "a transfer study is already running" in again["message"]
    code, run = await api("runs", "POST", {"path": "ws", "proposer": "offline", "tag": "t2"})
    assert code == 409 and "already running" in run["message"]
    # A server started afresh finds the study by engine.json and its command line (`transfer`, not `run`).
    found = Supervisor(supervisor.root).engine(studied)
    assert found is not None and found.kind == "transfer" and found.pid == started["pid"]
    code, stopping = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 202 and stopping["pid"] == started["pid"]
    await wait_for(lambda: not alive(started["pid"]), timeout=30, what="the study to stop")
    assert supervisor.engine(studied) is None
    shutil.rmtree(studied / ".autoresearch" / "t1" / "transfer")

    # With the defaults of program.md: env omitted.
    code, started = await api("transfer", "POST", {"path": "ws", "tag": "t1", "runs": 2})
    assert code == 202, started

    async def finished():
        code, status = await api("transfer", path="ws")
        return code == 200 and not status["running"] and status["summary"] is not None and status

    status = await wait_for(finished, timeout=120, what="the study to finish")
    summary = status["summary"]
    assert summary["changes"], "the run kept nothing: no change to study"
    assert summary["scale"] == "2×" and summary["budget_s"] == 2
    assert "changes transferred" in summary["summary"]["line"]
    assert all(c["verdict"] in ("transferred", "neutral", "reversed") for c in summary["changes"])
    assert status["failure"] is None and (studied / ".autoresearch" / "transfer-t1.log").is_file()

    # Another scale for the same study is the engine's refusal, relayed.
    code, refused = await api("transfer", "POST", {"path": "ws", "env": {"AUTORESEARCH_SCALE": "3"}, "runs": 2})
    assert code == 400 and "holds a study of run t1" in refused["message"]


async def test_a_study_through_slurm_from_the_panel(studied, supervisor, api):
    """The picker's Slurm entry: the study's engine gets --executor slurm, and no kernel."""
    assert os.environ.get("SLURM_CONF"), (
        "no Slurm cluster: run scripts/local-slurm.sh start and eval its env (make test does)"
    )
    body = {"path": "ws", "env": {"AUTORESEARCH_SCALE": "2"}, "runs": 2, "executor": "slurm"}
    code, started = await api("transfer", "POST", body)
    argv = (studied / ".autoresearch" / "transfer-t1.log").read_text().splitlines()[0]
    assert "transfer" in argv and "--executor slurm" in argv, argv
    assert "--kernel" not in argv and "--server-url" not in argv, argv
    assert code == 202, started

    async def finished():
        code, status = await api("transfer", path="ws")
        return code == 200 and not status["running"] and status["summary"] is not None and status

    status = await wait_for(finished, timeout=300, what="the study through Slurm to finish")
    assert status["failure"] is None and status["summary"]["scale"] == "2×"


@pytest.mark.parametrize(
    "body,field",
    [
        ({"path": "ws", "env": {"not a name": "1"}}, "env"),
        ({"path": "ws", "env": {"SCALE": 2}}, "env"),
        ({"path": "ws", "env": {"SCALE": "2\n3"}}, "env"),
        ({"path": "ws", "env": ["SCALE=2"]}, "env"),
        ({"path": "ws", "runs": 1}, "runs"),
        ({"path": "ws", "budget_s": 0}, "budget_s"),
        ({"path": "ws", "budget_s": 3000000}, "budget_s"),
        ({"path": "ws", "ablate": "yes"}, "ablate"),
        ({"path": "ws", "kernel": "no-such-kernel"}, "kernel"),
        ({"path": "ws", "tag": "none"}, "tag"),
        ({"path": "ws", "workers": 2}, "workers"),
        ({"path": "ws", "executor": "cloud"}, "executor"),
        ({"path": "ws", "executor": "slurm", "kernel": "python3"}, "executor"),
        ({"path": "ws", "executor": "kernel"}, "executor"),
    ],
)
async def test_bad_transfer_bodies_are_refused(body, field, workspace, supervisor, api):
    # A run folder with an empty journal is run enough for the checks, which come before any study.
    (workspace / ".autoresearch" / "t1").mkdir(parents=True)
    (workspace / ".autoresearch" / "t1" / "journal.jsonl").write_text("")
    code, reply = await api("transfer", "POST", body)
    assert code in (400, 404) and reply["field"] == field, reply
    assert not supervisor.children
