"""`load_transfer` on a transfer study the bundled engine made of a real run."""

import json
import shutil
import subprocess
import sys

import pytest

from jupyterlab_autoresearch import load_transfer
from jupyterlab_autoresearch.node import engine_path

# Deterministic, and deeper at AUTORESEARCH_SCALE=2: the offline proposer's learning-rate steps help at both scales.
TRAIN = """import os
LEARNING_RATE = 0.001
N_LAYER = 4
scale = float(os.environ.get("AUTORESEARCH_SCALE", "1"))
print("---")
print("val_bpb:          %.6f" % (1.0 - 0.1 * (scale - 1) + abs(LEARNING_RATE - 0.004) * scale + abs(N_LAYER - 6) * 0.01))
"""


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def engine(*args):
    node = shutil.which("node")
    assert node is not None, "the tests need Node.js >= 20 on the PATH"
    assert engine_path().is_file(), "run `npm run build:engine` (make setup does)"
    result = subprocess.run([node, str(engine_path()), *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("ws")
    (ws / "program.md").write_text("---\nbudget_s: 1\ntimeout_s: 20\n---\nMake val_bpb lower.\n")
    (ws / "train.py").write_text(TRAIN)
    (ws / "prepare.py").write_text("TIME_BUDGET = 1\n")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial")
    engine("run", str(ws), "--tag", "t1", "--max-experiments", "3", "--proposer", "offline", "--python", sys.executable)
    return ws


def test_load_transfer_reads_what_the_engine_derived(workspace):
    with pytest.raises(FileNotFoundError, match="no transfer study yet"):
        load_transfer(workspace)
    out = json.loads(
        engine(
            "transfer",
            str(workspace),
            "--env",
            "AUTORESEARCH_SCALE=2",
            "--runs",
            "2",
            "--json",
            "--python",
            sys.executable,
        )
    )
    assert out["changes"], "the offline proposer kept nothing: the study has no change to read"
    frame = load_transfer(workspace, "t1")
    rows = frame.to_dict("records") if hasattr(frame, "to_dict") else frame
    assert [r["commit"] for r in rows] == [c["commit"] for c in out["changes"]]
    assert [r["verdict"] for r in rows] == [c["verdict"] for c in out["changes"]]
    assert all(r["runs_transfer"] == 2 for r in rows)
    if hasattr(frame, "attrs"):
        assert frame.attrs["summary"]["line"] == out["summary"]["line"]
        assert frame.attrs["study"]["scale"] == "2×"
