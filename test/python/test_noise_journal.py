"""A journal of the noise-aware engine (run records, experiments with runs and verdicts): the
server reads it, counts only experiments as experiments, follows each run's log, and load() and
show() give the runs. The journal is written here by hand, so these tests need no engine run."""

import json
import shutil
import sys
from pathlib import Path

import pytest

from jupyterlab_autoresearch import load
from jupyterlab_autoresearch.notebooks.notebook import notebook_outputs
from jupyterlab_autoresearch.read.journal import JournalError, read_journal
from jupyterlab_autoresearch.read.journal_schema import problem
from jupyterlab_autoresearch.read.run_state import load_state
from jupyterlab_autoresearch.read.workspaces import log_path

EXPERIMENT_MIME = "application/vnd.autoresearch.experiment+json"
TS = "2026-11-30T00:00:00Z"
USAGE = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def commit(n: int) -> str:
    return format(n, "x").rjust(40, "b")


def run(n: int, i: int, metric, purpose: str, k: int, of: int | None = None) -> dict:
    of = n if of is None else of
    return {
        "type": "run",
        "ts": TS,
        "n": n,
        "commit": commit(of),
        "state": f"state{of}",
        "purpose": purpose,
        "k": k,
        "seed": 1000 * n + i,
        "metric": metric,
        "summary": {} if metric is None else {"val_bpb": metric},
        "run_s": 60.0,
        "exit_code": 0 if metric is not None else 1,
        "signal": None,
        "reason": None if metric is not None else "exited with code 1",
        "memory_gb": 2.0,
        "log_path": f".autoresearch/t/logs/{n:04d}{'' if i == 1 else f'-{i}'}.log",
    }


def experiment(n: int, runs: list[dict], status: str, verdict: dict | None, **over) -> dict:
    own = [r for r in runs if r["state"] == f"state{n}"]
    values = [r["metric"] for r in own if r["metric"] is not None]
    record = {
        "type": "experiment",
        "ts": TS,
        "n": n,
        "parent_commit": commit(max(0, n - 1)),
        "commit": commit(n),
        "description": f"experiment {n}",
        "rationale": "",
        "diff": "",
        "lines_added": 0,
        "lines_removed": 0,
        "summary": {},
        "metric": sum(values) / len(values) if values else None,
        "best_before": None if n == 0 else 1.0,
        "delta": None,
        "status": status,
        "reason": None,
        "memory_gb": 2.0,
        "timings": {"propose_s": 1, "run_s": 60.0 * len(runs), "total_s": 61.0 * len(runs)},
        "exit_code": 0,
        "signal": None,
        "log_path": None,
        "log_truncated": False,
        "proposer": "baseline" if n == 0 else "offline",
        "usage": USAGE,
        "cost_usd": 0.0,
        "state": f"state{n}",
        "runs": [
            {"k": r["k"], "seed": r["seed"], "metric": r["metric"], "run_s": r["run_s"], "log_path": r["log_path"]}
            for r in own
        ],
    }
    if verdict is not None:
        record["verdict"] = {
            "sigma": 0.004,
            "se": None,
            "floor": None,
            "keep_sigma": 2,
            "best_runs": 3,
            "strict": False,
            "confirmed": False,
            "spent": {"measure": 1, "noise": 0, "confirm": 0, "best": 0},
            **verdict,
        }
    record.update(over)
    return record


def noisy_records() -> list[dict]:
    """#0 the baseline on 3 runs; #1 kept on 2 confirming runs; #2 within noise after a re-measure
    of #1; #3 in flight, its first run done."""
    r0 = [run(0, 1, 1.0, "measure", 1), run(0, 2, 1.004, "noise", 2), run(0, 3, 0.996, "noise", 3)]
    r1 = [run(1, 1, 0.98, "measure", 1), run(1, 2, 0.984, "confirm", 2)]
    r2 = [run(2, 1, 0.979, "measure", 1), run(2, 2, 0.983, "best", 3, of=1), run(2, 3, 0.985, "confirm", 2)]
    start = {
        "type": "run_start",
        "ts": TS,
        "tag": "t",
        "branch": "autoresearch/t",
        "resume": False,
        "base_commit": "a" * 40,
        "proposer": "offline",
        "seed": 0,
        "readonly_hashes": {},
        "engine_version": "0.2.0",
        "pid": 1,
        "config": {
            "metric": "val_bpb",
            "direction": "lower",
            "budget_s": 60,
            "timeout_s": 120,
            "run": "python train.py",
            "editable": ["train.py"],
            "readonly": [],
            "noise_runs": 3,
            "keep_sigma": 2,
            "confirm_runs": 2,
        },
    }
    return [
        start,
        *r0,
        experiment(
            0,
            r0,
            "keep",
            {"se": 0.0023, "best_runs": 0, "confirmed": True},
            reason="the reference: mean of 3 runs, σ 0.0040",
        ),
        *r1,
        experiment(
            1,
            r1,
            "keep",
            {"se": 0.0028, "floor": 0.0073, "confirmed": True},
            delta=-0.018,
            reason="beats the noise (−0.0180; floor 0.0073 at 2σ, 2 runs)",
        ),
        *r2,
        experiment(
            2,
            r2,
            "discard",
            {"se": 0.0028, "floor": 0.0073},
            delta=-0.0002,
            reason="within noise (−0.0002; floor 0.0073 at 2σ)",
        ),
        {"type": "experiment_start", "ts": TS, "n": 3, "parent_commit": commit(1), "description": "experiment 3"},
        run(3, 1, 0.99, "measure", 1),
    ]


def write_journal(folder, records) -> Path:
    journal = folder / ".autoresearch" / "t" / "journal.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    return journal


def test_run_records_and_the_new_experiment_fields_are_valid():
    for record in noisy_records():
        assert problem(record) is None, record
    bad_run = {**run(1, 1, 0.9, "measure", 1), "purpose": "lucky"}
    assert problem(bad_run) == "run.purpose 'lucky' is not one of ['best', 'confirm', 'measure', 'noise']"
    lacking = {k: v for k, v in run(1, 1, 0.9, "measure", 1).items() if k != "state"}
    assert problem(lacking) == "run record lacks 'state'"
    exp = next(r for r in noisy_records() if r["type"] == "experiment" and r["n"] == 1)
    assert (
        problem({**exp, "runs": [{"k": 1, "seed": 1, "run_s": 1.0, "log_path": None}]})
        == "experiment.runs[0] lacks 'metric'"
    )
    assert problem({**exp, "verdict": 2}) == "experiment.verdict is integer 2, expected object"
    assert problem({**exp, "same_as": "x"}) == 'experiment.same_as is string "x", expected integer'


def test_the_server_counts_experiments_not_runs(tmp_path, engine_bundle):
    """The server reads what the engine makes of the journal (`autoresearch state` writes state.json)."""
    journal = write_journal(tmp_path, noisy_records())
    s = load_state(tmp_path, "t", live=False)
    assert (tmp_path / ".autoresearch" / "t" / "state.json").is_file()
    assert s["journal_bytes"] == journal.stat().st_size and s["records"] == len(noisy_records())
    assert s["experiments"] == 3
    assert {k: v for k, v in s["counts"].items() if v} == {"keep": 2, "discard": 1}
    assert s["best"]["n"] == 1
    # The engine's estimate: the mean of all 3 runs of #1's code (2 its own, 1 a re-measure
    # while judging #2), not the 0.982 of its own 2 that "the last keep" used to give.
    assert s["best"]["metric"] == pytest.approx((0.98 + 0.984 + 0.983) / 3)
    assert s["status"] == "died"  # running (no run_end) and no engine: killed
    # Experiment 3's second run is the one training now: its log is the second one.
    (flight,) = s["in_flight"]
    assert flight["n"] == 3 and flight["runs"] == 1
    assert log_path(tmp_path, "t", 3, flight["runs"] + 1).name == "0003-2.log"
    assert log_path(tmp_path, "t", 3).name == "0003.log"


def test_a_bad_run_record_stops_the_read_at_its_line(tmp_path):
    records = noisy_records()
    records[2] = {**records[2], "metric": "high"}
    with pytest.raises(
        JournalError, match='line 3 is not a valid journal record: run.metric is string "high", expected number or null'
    ):
        read_journal(write_journal(tmp_path, records))


def test_load_gives_each_experiment_its_runs(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    rows = load(write_journal(tmp_path, noisy_records()))
    assert [r["n"] for r in rows] == [0, 1, 2]
    assert [r["runs"] for r in rows] == [3, 2, 2]
    assert rows[0]["run_metrics"] == [1.0, 1.004, 0.996]
    assert rows[1]["metric"] == pytest.approx(0.982)
    assert [r["se"] for r in rows] == [0.0023, 0.0028, 0.0028]
    assert [r["sigma"] for r in rows] == [0.004] * 3
    assert [r["confirmed"] for r in rows] == [True, True, False]
    assert [ref["seed"] for ref in rows[2]["run_list"]] == [2001, 2003]
    assert "type" not in rows[0]


def test_load_of_an_older_journal_counts_one_run_per_experiment(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    old = [
        {k: v for k, v in r.items() if k not in ("runs", "verdict", "state")}
        for r in noisy_records()
        if r["type"] != "run"
    ]
    old[2]["status"] = "crash"
    old[2]["metric"] = None
    rows = load(write_journal(tmp_path, old))
    assert [r["runs"] for r in rows] == [1, 1, 1]
    assert rows[0]["run_metrics"] == [rows[0]["metric"]]
    assert rows[1]["run_metrics"] == [None]
    assert [r["se"] for r in rows] == [None, None, None]
    assert [r["confirmed"] for r in rows] == [False, False, False]
    assert "run_list" not in rows[0]


def test_load_as_a_dataframe(tmp_path):
    pd = pytest.importorskip("pandas")
    df = load(write_journal(tmp_path, noisy_records()))
    assert isinstance(df, pd.DataFrame)
    for column in ("runs", "se", "sigma", "confirmed", "run_metrics"):
        assert column in df.columns
    assert list(df["runs"]) == [3, 2, 2]
    assert list(df["run_metrics"].iloc[1]) == [0.98, 0.984]
    # The best as the engine estimates it (all 3 runs of #1's code), from state.json.
    assert df.attrs["best"]["n"] == 1 and df.attrs["best"]["metric"] == pytest.approx((0.98 + 0.984 + 0.983) / 3)


def test_show_renders_what_the_export_does(tmp_path, engine_bundle):
    assert shutil.which("node"), "the tests need Node.js >= 20.19 on the PATH"
    (tmp_path / "program.md").write_text("Make val_bpb lower.\n")
    write_journal(tmp_path, noisy_records())
    summary, chart, *experiments = notebook_outputs(tmp_path)
    assert set(summary) == {"text/markdown", "text/plain"}
    assert "σ 0.00" in summary["text/markdown"] and "trust: " in summary["text/markdown"]
    assert (
        "5 of 9 runs on measurement and confirmation (2 noise, 2 confirmation, 1 re-measuring the best)"
        in summary["text/markdown"]
    )
    assert chart["application/vnd.vegalite.v5+json"]["layer"][0]["name"] == "noise band"
    assert [b[EXPERIMENT_MIME]["n"] for b in experiments] == [0, 1, 2]
    kept = experiments[1]
    assert kept[EXPERIMENT_MIME]["runs"][1]["seed"] == 1002
    assert "± 0.0028 (2 runs)" in kept["text/plain"].splitlines()[0]
    assert "2 runs: mean 0.982000 ± 0.0028, confirmed" in kept["text/html"]
    assert "<script" not in kept["text/html"] and "style=" not in kept["text/html"]


async def test_the_stream_follows_each_run_of_the_experiment_in_flight(workspace, supervisor, jp_ws_fetch):
    """Run records go out with the others, and the live log moves to the run being made now."""
    from conftest import wait_for

    records = noisy_records()
    journal = write_journal(workspace, records)
    logs = journal.parent / "logs"
    logs.mkdir()
    (logs / "0003.log").write_text("first run\n")
    (logs / "0003-2.log").write_text("second run\n")
    socket = await jp_ws_fetch("autoresearch", "events", params={"path": "ws", "tag": "t"})
    seen: list[dict] = []

    async def until(predicate):
        message = json.loads(await socket.read_message())
        seen.append(message)
        return predicate(message)

    await wait_for(lambda: until(lambda m: m["type"] == "log"), timeout=30, what="the live log")
    got = [r for m in seen if m["type"] == "records" for r in m["records"]]
    assert [r["type"] for r in got] == [r["type"] for r in records]
    log = seen[-1]
    # Experiment 3 has one run journaled: what is being written is its second run's log.
    assert log["n"] == 3 and log["path"].endswith("logs/0003-2.log") and log["lines"] == ["second run"] and log["reset"]
    # What the engine makes of the journal comes once, after the replay (state.json rewritten by
    # `autoresearch state`: no engine wrote it), with the best's estimate and the dead run's status.
    (state,) = [m["run_state"] for m in seen if m["type"] == "run_state"]
    assert state["records"] == len(records) and state["status"] == "died"
    assert state["best"]["n"] == 1 and state["in_flight"][0]["n"] == 3

    # The second run ends and the third starts: the log follows it, from a fresh start.
    (logs / "0003-3.log").write_text("third run\n")
    with open(journal, "a") as f:
        f.write(json.dumps(run(3, 2, 0.991, "confirm", 2)) + "\n")
    message = await wait_for(
        lambda: until(lambda m: m if m["type"] == "log" and m["path"].endswith("0003-3.log") else None),
        timeout=30,
        what="the third run's log",
    )
    assert message["lines"] == ["third run"] and message["reset"]
    assert [m["run_state"]["records"] for m in seen if m["type"] == "run_state"] == [len(records), len(records) + 1]
    assert any(m["type"] == "records" and m["records"][0]["type"] == "run" for m in seen[1:])
    socket.close()
