"""`load_transfer` on a transfer study the bundled engine made of a real run."""

import json
import shutil
import subprocess
import sys

import pytest

from conftest import committed_workspace
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
    committed_workspace(ws, TRAIN)
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


def test_load_and_export_carry_the_study(workspace):
    # Runs after the test above made the study (module order): load() has it beside the experiments.
    from jupyterlab_autoresearch import load

    frame = load(workspace, "t1")
    study = load_transfer(workspace, "t1").attrs["study"]
    assert frame.attrs["transfer"] == study
    engine("export", str(workspace), "--tag", "t1")
    nb = json.loads((workspace / "t1.ipynb").read_text())
    ids = [c["id"] for c in nb["cells"]]
    # Its own section, after the progress chart and before the experiments.
    assert ids[ids.index("chart") + 1 : ids.index("chart") + 3] == ["transfer", "transfer-results"]
    heading = "".join(nb["cells"][ids.index("transfer")]["source"])
    assert heading.startswith("## Transfer study") and "AUTORESEARCH_SCALE=2" in heading
    table, chart = nb["cells"][ids.index("transfer-results")]["outputs"]
    html = "".join(table["data"]["text/html"])
    assert study["summary"]["line"] in html
    for change in study["changes"]:
        assert change["commit"][:7] in html and change["verdict"] in html
    spec = chart["data"]["application/vnd.vegalite.v5+json"]
    assert {p["scale"] for p in spec["data"]["values"]} == {"search", "transfer"}
    assert "".join(chart["data"]["image/svg+xml"]).startswith("<svg")


def test_a_damaged_study_is_named_not_fatal(workspace, tmp_path):
    from jupyterlab_autoresearch import load

    summary = workspace / ".autoresearch" / "t1" / "transfer" / "summary.json"
    saved = summary.read_text()
    try:
        summary.write_text("{not json")
        with pytest.warns(UserWarning, match="transfer study is unreadable.*is not JSON.*rerun the study"):
            assert load(workspace, "t1").attrs["transfer"] is None
        engine("export", str(workspace), "--tag", "t1", "--out", str(tmp_path / "x.ipynb"))
        nb = json.loads((tmp_path / "x.ipynb").read_text())
        text = "".join(next(c for c in nb["cells"] if c["id"] == "transfer")["source"])
        assert "is not JSON" in text and "autoresearch transfer" in text
    finally:
        summary.write_text(saved)


def test_a_run_without_a_study_loads_none(tmp_path):
    from jupyterlab_autoresearch import load

    ws = tmp_path / "ws"
    ws.mkdir()
    committed_workspace(ws, TRAIN)
    engine("run", str(ws), "--tag", "t2", "--max-experiments", "1", "--proposer", "offline", "--python", sys.executable)
    assert load(ws, "t2").attrs["transfer"] is None
    engine("export", str(ws), "--tag", "t2")
    nb = json.loads((ws / "t2.ipynb").read_text())
    assert "transfer" not in [c["id"] for c in nb["cells"]]
