"""Reading `.autoresearch/<tag>/state.json`: taken as the engine wrote it when it matches the journal,
rewritten by `autoresearch state` once when it does not and no engine writes it, refused when it is
not the engine's. Real files; a state.json written here by hand stands for the engine's."""

import json
import math
import os
from pathlib import Path

import pytest
from test_noise_journal import noisy_records, write_journal

from jupyterlab_autoresearch.errors import StateUnreadable, Unavailable
from jupyterlab_autoresearch.read.run_state import empty_state, load_state, read_state_file, run_activity
from jupyterlab_autoresearch.read.runs import run_status
from jupyterlab_autoresearch.routes.web_errors import api_error
from jupyterlab_autoresearch.supervise.supervisor import Supervisor

END = {
    "type": "run_end",
    "ts": "2026-01-01T00:00:00Z",
    "reason": "stop",
    "message": None,
    "best_commit": None,
    "best_metric": None,
}


def write_run(ws: Path, state: dict | None, records=(END,), tag: str = "t", stale: bool = False) -> Path:
    """A journal, and a state.json that reflects it (or its size less one byte when stale)."""
    run = ws / ".autoresearch" / tag
    run.mkdir(parents=True, exist_ok=True)
    journal = run / "journal.jsonl"
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    if state is not None:
        (run / "state.json").write_text(
            json.dumps({**state, "journal_bytes": journal.stat().st_size - stale, "records": len(records)})
        )
    return journal


def two_workers() -> dict:
    flights = [
        {"n": 5, "worker": 1, "description": "five", "ts": "t5", "parent_commit": "c", "runs": 0},
        {"n": 6, "worker": 2, "description": "six", "ts": "t6", "parent_commit": "c", "runs": 2},
    ]
    return {
        **empty_state("t"),
        "status": "stopped",
        "updated": "2026-01-01T00:00:00Z",
        "run": {
            "branch": "autoresearch/t",
            "proposer": "offline",
            "metric": "val_bpb",
            "direction": "lower",
            "budget_s": 60,
            "workers": 2,
            "started": "2025-12-31T00:00:00Z",
        },
        "experiments": 5,
        "counts": {"keep": 2, "discard": 3},
        "best": {"n": 3, "commit": "abc", "metric": 0.97, "runs": 3, "stderr": 0.001},
        "baseline": {"n": 0, "metric": 1.0},
        "in_flight": flights,
        "cost_usd": 0.25,
        "tokens": 1234,
        "sandbox": "on",
        "end": {"reason": "stop", "message": None, "ts": "2026-01-01T00:00:00Z"},
    }


@pytest.fixture
def no_node(monkeypatch, tmp_path):
    """No Node.js: a state.json taken as it is proves no `autoresearch state` ran."""
    monkeypatch.setenv("AUTORESEARCH_NODE", str(tmp_path / "no-node"))


def test_a_current_state_file_is_taken_as_the_engine_wrote_it(tmp_path, no_node):
    write_run(tmp_path, two_workers())
    state = load_state(tmp_path, "t", live=False)
    assert state["best"] == {"n": 3, "commit": "abc", "metric": 0.97, "runs": 3, "stderr": 0.001}
    assert state["status"] == "stopped"


def test_running_without_a_live_engine_is_died(tmp_path, no_node):
    write_run(tmp_path, {**two_workers(), "status": "running"})
    assert load_state(tmp_path, "t", live=False)["status"] == "died"
    assert load_state(tmp_path, "t", live=True)["status"] == "running"


def test_a_live_engine_s_state_is_taken_even_a_step_behind_and_a_missing_one_is_empty(tmp_path, no_node):
    journal = write_run(tmp_path, two_workers())
    with journal.open("a") as f:
        f.write(json.dumps(END) + "\n")  # appended; the engine rewrites state.json just after
    assert load_state(tmp_path, "t", live=True)["experiments"] == 5
    (tmp_path / ".autoresearch" / "t" / "state.json").unlink()
    assert load_state(tmp_path, "t", live=True) == empty_state("t")


def test_a_stale_state_without_an_engine_needs_node_and_says_so(tmp_path, no_node):
    journal = write_run(tmp_path, two_workers())
    with journal.open("a") as f:
        f.write(json.dumps(END) + "\n")
    with pytest.raises(Unavailable, match="Node.js >= 20.19 is required"):
        load_state(tmp_path, "t", live=False)


def test_a_failing_state_command_runs_once_per_journal_size_and_names_the_problem(tmp_path, monkeypatch):
    """A stand-in for node that answers --version like Node.js 22 and fails the way the engine
    does (exit 1, an `autoresearch: …` line), counting how often it is run."""
    calls = tmp_path / "calls"
    node = tmp_path / "node"
    node.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then echo v22.0.0; exit 0; fi\n'
        f'echo "$@" >> {calls}\necho "autoresearch: the journal line 2 is bad; repair it" >&2\nexit 1\n'
    )
    node.chmod(0o755)
    monkeypatch.setenv("AUTORESEARCH_NODE", str(node))
    journal = write_run(tmp_path, None)
    for _ in range(2):
        with pytest.raises(StateUnreadable) as refused:
            load_state(tmp_path, "t", live=False)
        message = refused.value.message
        assert "state.json could not be rewritten from its journal by `autoresearch state`" in message
        assert message.endswith("the journal line 2 is bad; repair it")
    (argv,) = calls.read_text().splitlines()
    assert argv.split()[-4:] == ["state", str(tmp_path), "--tag", "t"]
    assert api_error(refused.value).status_code == 409
    with journal.open("a") as f:
        f.write(json.dumps(END) + "\n")  # a new size: tried again
    with pytest.raises(StateUnreadable):
        load_state(tmp_path, "t", live=False)
    assert len(calls.read_text().splitlines()) == 2


@pytest.mark.parametrize(
    "content,says",
    [
        ("{oops", "is not JSON"),
        ('{"version": 1, "journal_bytes": NaN}', "is not JSON"),
        ("[]", "is not a JSON object"),
        (json.dumps({**empty_state("t"), "in_flight": [{"n": "3", "runs": 0}]}), "'in_flight'"),
        (json.dumps({**empty_state("t"), "best": {"n": 1, "metric": "low"}}), "'best'"),
        (json.dumps({**empty_state("t"), "status": "died"}), "'status'"),
        (json.dumps({**empty_state("t"), "version": 2}), "'version'"),
        (json.dumps({**empty_state("t"), "trust": 3}), "'trust'"),
        (json.dumps({k: v for k, v in empty_state("t").items() if k != "trust"}), "'trust'"),
        (json.dumps({**empty_state("t"), "step": "on"}), "'step'"),
    ],
)
def test_a_state_file_that_is_not_the_engine_s_is_refused_naming_it(tmp_path, content, says):
    write_run(tmp_path, None)
    (tmp_path / ".autoresearch" / "t" / "state.json").write_text(content)
    with pytest.raises(StateUnreadable, match=says) as refused:
        read_state_file(tmp_path, "t")
    assert ".autoresearch/t/state.json" in refused.value.message and "delete it" in refused.value.message


def test_a_state_file_that_links_out_is_not_read(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(empty_state("t")))
    ws = tmp_path / "ws"
    write_run(ws, None)
    os.symlink(secret, ws / ".autoresearch" / "t" / "state.json")
    with pytest.raises(StateUnreadable, match="resolves outside"):
        read_state_file(ws, "t")


def test_run_status_keeps_its_shape_with_the_engine_s_best_and_each_worker_s_flight(tmp_path, no_node):
    write_run(tmp_path, two_workers())
    status = run_status(Supervisor(tmp_path), tmp_path, "t", None)
    assert status == {
        "tag": "t",
        "state": "stopped",
        "pid": None,
        "engine_started": None,
        "stopping": False,
        "resumable": True,
        "in_flight": {"n": 6, "description": "six", "ts": "t6", "log": ".autoresearch/t/logs/0006-3.log"},
        "in_flight_all": [
            {"n": 5, "worker": 1, "description": "five", "ts": "t5", "log": ".autoresearch/t/logs/0005.log"},
            {"n": 6, "worker": 2, "description": "six", "ts": "t6", "log": ".autoresearch/t/logs/0006-3.log"},
        ],
        "engine_log": None,
        "sandbox": "on",
        "branch": "autoresearch/t",
        "proposer": "offline",
        "metric": "val_bpb",
        "direction": "lower",
        "budget_s": 60,
        "workers": 2,
        "started": "2025-12-31T00:00:00Z",
        "updated": "2026-01-01T00:00:00Z",
        "experiments": 5,
        "counts": {"keep": 2, "discard": 3},
        "best": {"n": 3, "metric": 0.97, "commit": "abc"},
        "baseline": 1.0,
        "cost_usd": 0.25,
        "tokens": 1234,
        "end": {"reason": "stop", "message": None, "ts": "2026-01-01T00:00:00Z"},
        "pending": None,
        "step": False,
        "records": 1,
    }
    assert not math.isnan(status["best"]["metric"])


def test_the_real_state_command_rewrites_a_stale_file(tmp_path, engine_bundle):
    journal = write_run(tmp_path, two_workers(), stale=True)
    state = load_state(tmp_path, "t", live=False)
    assert state["journal_bytes"] == journal.stat().st_size
    assert state["records"] == 1 and state["status"] == "stopped" and state["in_flight"] == []
    assert state["end"]["reason"] == "stop"


def test_a_state_file_from_before_the_trust_report_is_rewritten_with_it(tmp_path, engine_bundle):
    """An older engine's file matches the journal's size but lacks `trust`, which the panel
    needs: it is rewritten once, and the report is the engine's for the run's repeats."""
    journal = write_journal(tmp_path, noisy_records())
    older = {k: v for k, v in empty_state("t").items() if k != "trust"}
    (journal.parent / "state.json").write_text(
        json.dumps({**older, "journal_bytes": journal.stat().st_size, "records": len(noisy_records())})
    )
    state = load_state(tmp_path, "t", live=False)
    trust = state["trust"]
    assert trust["runs"] == 9 and trust["extraRuns"] == 5
    assert trust["byPurpose"] == {"measure": 4, "noise": 2, "confirm": 2, "best": 1}
    assert [p["proposer"] for p in trust["byProposer"]] == ["baseline", "offline"]
    assert read_state_file(tmp_path, "t")["trust"] == trust


def test_a_run_from_before_repeats_has_no_trust_report(tmp_path, engine_bundle):
    write_run(tmp_path, two_workers(), stale=True)
    assert load_state(tmp_path, "t", live=False)["trust"] is None


async def test_get_runs_reports_a_run_it_cannot_read_the_state_of_for_itself(
    jp_root_dir, engine_bundle, supervisor, api, monkeypatch
):
    ws = Path(jp_root_dir) / "ws"
    write_run(ws, two_workers(), tag="current")
    write_run(ws, None, tag="old")  # no state.json: it needs `autoresearch state`, hence Node.js
    monkeypatch.setenv("AUTORESEARCH_NODE", str(Path(jp_root_dir) / "no-node"))
    code, reply = await api("runs", path="ws")
    assert code == 200, reply
    runs = {r["tag"]: r for r in reply["runs"]}
    assert runs["current"]["state"] == "stopped" and runs["current"]["best"]["metric"] == 0.97
    assert runs["old"]["state"] == "corrupt" and "Node.js >= 20.19 is required" in runs["old"]["error"]
    code, reply = await api("runs/status", path="ws", tag="old")
    assert code == 503 and "Node.js >= 20.19 is required" in reply["message"]


PENDING = {"n": 3, "description": "try 3", "since": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("state", "live", "activity"),
    [
        # The same cases as test/run-state.test.ts's runActivity: both languages say the same.
        ({"status": "stopped", "pending": None}, False, "stopped"),
        ({"status": "running", "pending": None}, False, "died"),
        ({"status": "running", "pending": PENDING}, False, "died"),
        ({"status": "died"}, False, "died"),
        ({"status": "running", "pending": None}, True, "running"),
        ({"status": "running"}, True, "running"),
        ({"status": "running", "pending": PENDING}, True, "awaiting-review"),
        ({"status": "stopped", "pending": PENDING}, True, "running"),
    ],
)
def test_run_activity_combines_the_state_with_a_live_engine(state, live, activity):
    assert run_activity(state, live) == activity
