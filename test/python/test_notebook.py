"""`from jupyterlab_autoresearch import load, show` on a real run of the bundled engine."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, committed_workspace, make_workspace, write_long_run
from jupyterlab_autoresearch import load, show
from jupyterlab_autoresearch.node import engine_path

EXPERIMENT_MIME = "application/vnd.autoresearch.experiment+json"
VEGALITE_MIME = "application/vnd.vegalite.v5+json"

TRAIN = """import os, sys
LEARNING_RATE = 0.001
N_LAYER = 4
print("step 1 | loss 3.2500", flush=True)
print("---")
print("val_bpb:          %.6f" % (1.0 + abs(LEARNING_RATE - 0.004) + abs(N_LAYER - 6) * 0.01))
print("peak_vram_mb:     2048.0")
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A workspace with run `t1`: the baseline and 2 offline proposals, trained by the real engine."""
    node = shutil.which("node")
    assert node is not None, "the tests need Node.js >= 20.19 on the PATH"
    assert engine_path().is_file(), "run `npm run build:engine` (make setup does)"
    ws = tmp_path_factory.mktemp("ws")
    committed_workspace(ws, TRAIN)
    run = subprocess.run(
        [
            node,
            str(engine_path()),
            "run",
            str(ws),
            "--tag",
            "t1",
            "--max-experiments",
            "2",
            "--proposer",
            "offline",
            "--python",
            sys.executable,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return ws


def journal_experiments(ws):
    lines = (ws / ".autoresearch" / "t1" / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if json.loads(line)["type"] == "experiment"]


def test_load_returns_a_dataframe_of_the_experiments(workspace):
    pd = pytest.importorskip("pandas")
    df = load(workspace)
    assert isinstance(df, pd.DataFrame)
    expected = journal_experiments(workspace)
    assert len(df) == len(expected) == 3
    assert list(df["n"]) == [0, 1, 2]
    assert df["status"].iloc[0] == "keep"
    assert df["metric"].iloc[0] == expected[0]["metric"]
    assert list(df["description"]) == [e["description"] for e in expected]
    for column in (
        "n",
        "status",
        "metric",
        "delta",
        "description",
        "rationale",
        "diff",
        "memory_gb",
        "timings",
        "cost_usd",
    ):
        assert column in df.columns
    assert "type" not in df.columns


def test_load_without_pandas_returns_dicts(workspace, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    rows = load(workspace, tag="t1")
    expected = journal_experiments(workspace)
    assert isinstance(rows, list)
    added = {"runs", "run_list", "run_metrics", "se", "sigma", "confirmed"}
    assert [{k: v for k, v in r.items() if k not in added} for r in rows] == [
        {k: v for k, v in e.items() if k not in added and k != "type"} for e in expected
    ]
    # Each experiment's runs: the record's own list when the engine repeats runs, else its one run.
    assert [r["runs"] for r in rows] == [len(e["runs"]) if "runs" in e else 1 for e in expected]
    assert [r["run_metrics"] for r in rows] == [
        [x["metric"] for x in e["runs"]] if "runs" in e else [e["metric"]] for e in expected
    ]


def test_load_takes_a_journal_file_or_run_folder(workspace, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    run = workspace / ".autoresearch" / "t1"
    assert load(run / "journal.jsonl") == load(run) == load(workspace)


def test_load_skips_a_torn_last_line(workspace, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    journal = tmp_path / "journal.jsonl"
    journal.write_text((workspace / ".autoresearch" / "t1" / "journal.jsonl").read_text() + '{"type": "experi')
    assert len(load(journal)) == 3


def test_load_names_a_missing_run(workspace, tmp_path):
    with pytest.raises(FileNotFoundError, match='no run tagged "nope"'):
        load(workspace, tag="nope")
    with pytest.raises(FileNotFoundError, match="no runs in"):
        load(tmp_path)


def capture_display(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False, **kw: shown.append((obj, raw)))
    return shown


def test_show_displays_the_chart_then_each_experiment(workspace, monkeypatch):
    shown = capture_display(monkeypatch)
    show(workspace)
    assert all(raw for _, raw in shown)
    bundles = [obj for obj, _ in shown]
    summary, chart, *experiments = bundles
    assert set(summary) == {"text/markdown", "text/plain"}
    assert summary["text/markdown"].startswith("## Run `t1`")
    assert set(chart) == {VEGALITE_MIME, "image/svg+xml", "text/plain"}
    assert chart["image/svg+xml"].startswith("<svg ")
    assert chart[VEGALITE_MIME]["$schema"].endswith("vega-lite/v5.json")
    expected = journal_experiments(workspace)
    assert len(experiments) == len(expected)
    for bundle, record in zip(experiments, expected, strict=True):
        assert set(bundle) == {EXPERIMENT_MIME, "text/html", "text/plain"}
        assert bundle[EXPERIMENT_MIME]["n"] == record["n"]
        assert isinstance(bundle["text/html"], str) and f"<b>#{record['n']}</b>" in bundle["text/html"]
        assert "<script" not in bundle["text/html"] and "style=" not in bundle["text/html"]
        assert bundle["text/plain"].startswith(f"#{record['n']} {record['status']}")


def test_show_without_node_reads_an_exported_notebook(workspace, monkeypatch, tmp_path):
    with_node = capture_display(monkeypatch)
    show(workspace)
    monkeypatch.setenv("AUTORESEARCH_NODE", str(tmp_path / "no-node"))
    with pytest.raises(RuntimeError, match="Node.js >= 20.19 is required.*autoresearch export"):
        show(workspace)
    exported = workspace / "t1.ipynb"
    subprocess.run(
        [shutil.which("node"), str(engine_path()), "export", str(workspace)], check=True, capture_output=True
    )
    try:
        from_file = capture_display(monkeypatch)
        show(workspace)
    finally:
        exported.unlink()
    assert from_file == with_node


def test_load_gives_the_engine_s_best_and_state_in_attrs(workspace):
    pytest.importorskip("pandas")
    df = load(workspace)
    state = json.loads((workspace / ".autoresearch" / "t1" / "state.json").read_text())
    assert df.attrs["run_state"] == state and state["status"] == "stopped"
    assert df.attrs["best"] == state["best"] and df.attrs["best"]["n"] in set(df["n"])


def test_attrs_best_has_the_keys_the_docs_name(workspace):
    """docs/notebooks-api.md's `df.attrs["best"]` line names its keys; they are state.json's best's, no more, no fewer."""
    pytest.importorskip("pandas")
    page = (ROOT / "docs" / "notebooks-api.md").read_text()
    (named,) = re.findall(r'^df\.attrs\["best"\]\s+# the engine\'s best \(([^)]*)\)', page, re.MULTILINE)
    best = load(workspace).attrs["best"]
    assert set(best) == {k.strip() for k in named.split(",")} == {"n", "commit", "metric", "runs", "stderr"}
    assert best["metric"] == min(e["metric"] for e in journal_experiments(workspace) if e["status"] == "keep")


LONG = 2000


@pytest.fixture(scope="module")
def long_run(tmp_path_factory, engine_bundle):
    """A workspace whose run t1 has 2,000 experiments: its exported notebook is over 1 MB."""
    ws = make_workspace(tmp_path_factory.mktemp("long") / "ws")
    write_long_run(ws, LONG)
    return ws


def test_show_and_load_take_a_run_past_many_pipe_buffers(long_run, monkeypatch, tmp_path):
    exported = tmp_path / "t1.ipynb"
    subprocess.run(
        [shutil.which("node"), str(engine_path()), "export", str(long_run), "--out", str(exported)],
        check=True,
        capture_output=True,
    )
    assert exported.stat().st_size > 1024 * 1024
    shown = capture_display(monkeypatch)
    show(long_run)
    summary, chart, *experiments = [obj for obj, _ in shown]
    assert summary["text/markdown"].startswith("## Run `t1`") and VEGALITE_MIME in chart
    assert [b[EXPERIMENT_MIME]["n"] for b in experiments] == list(range(LONG))
    # Nothing of the export is left behind: it went to a private temp folder, not the workspace.
    assert not (long_run / "t1.ipynb").exists()
    pytest.importorskip("pandas")
    df = load(long_run)
    assert len(df) == LONG and list(df["n"]) == list(range(LONG))
    assert df.attrs["best"]["n"] == 1990 and df.attrs["run_state"]["experiments"] == LONG
