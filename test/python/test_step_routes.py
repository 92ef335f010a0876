"""Step mode through the server: GET/POST review and POST runs/step on a real jupyter server, with
the real engine waiting on real proposals (the offline proposer) in a real git workspace."""

import json

import pytest

from conftest import journal, make_workspace, wait_for
from rest_conformance import conforms


def reviews(ws, event):
    return [r for r in journal(ws, "t1") if r["type"] == "review" and r["event"] == event]


def experiment(ws, n):
    return next((r for r in journal(ws, "t1") if r["type"] == "experiment" and r["n"] == n), None)


async def pending_n(api, n):
    code, status = await api("runs/status", path="ws", tag="t1")
    return code == 200 and status["state"] == "awaiting-review" and (status["pending"] or {}).get("n") == n and status


async def test_a_run_reviewed_from_the_panel(workspace, supervisor, api):
    body = {"path": "ws", "proposer": "offline", "tag": "t1", "noise_runs": 1, "pipeline": False}
    code, started = await api("runs", "POST", body)
    assert code == 202, started

    # Switched on while it runs: from the next proposal on, each waits.
    code, switched = await api("runs/step", "POST", {"path": "ws", "step": True})
    assert code == 200 and switched == {"tag": "t1", "step": True}
    conforms("step", switched)
    status = await wait_for(lambda: pending_n(api, 1), timeout=60, what="#1 awaiting review")
    assert status["step"] is True and status["pid"] == started["pid"]
    assert reviews(workspace, "mode")[0] | {"ts": None} == {
        "type": "review",
        "ts": None,
        "n": 1,
        "event": "mode",
        "step": True,
        "source": "panel",
    }
    code, runs = await api("runs", path="ws")
    assert runs["engine"]["kind"] == "run"
    (run,) = runs["runs"]
    assert run["state"] == "awaiting-review" and run["pending"]["n"] == 1 and run["step"] is True
    conforms("runs", runs)

    code, shown = await api("review", path="ws")
    assert code == 200 and shown["tag"] == "t1" and shown["live"] is True
    conforms("review", shown)
    pending = shown["pending"]
    assert pending["n"] == 1 and pending["proposer"] == "offline" and pending["editable"] == ["train.py"]
    assert pending["why"].startswith("offline move: ") and pending["diff"].startswith("diff --git")
    assert pending["files"]["train.py"] == (workspace / "train.py").read_text()

    # Refusals: another number (409 naming the pending one), a file it may not replace, bad values.
    code, refused = await api("review", "POST", {"path": "ws", "n": 5, "decision": "approve"})
    assert code == 409 and "#1 is" in refused["message"] and refused["field"] == "n"
    for bad, field in [
        ({"files": {"prepare.py": "x = 1\n"}}, "files"),
        ({"files": {"train.py": 3}}, "files"),
        ({"note": 7}, "note"),
        ({"decision": "maybe"}, "decision"),
        ({"decision": "reject", "all": True}, "all"),
        ({"n": -1}, "n"),
        ({"extra": 1}, "extra"),
    ]:
        code, reply = await api("review", "POST", {"path": "ws", "n": 1, "decision": "approve", **bad})
        assert code == 400 and reply["field"] == field, (bad, reply)
    assert not (workspace / ".autoresearch" / "t1" / "review-decision.json").exists()

    code, decided = await api("review", "POST", {"path": "ws", "n": 1, "decision": "reject", "note": "too timid"})
    assert code == 202 and decided == {"tag": "t1", "n": 1, "decision": "reject"}
    conforms("review_decided", decided)
    rejected = await wait_for(lambda: experiment(workspace, 1), timeout=60, what="#1 recorded")
    assert rejected["status"] == "rejected" and rejected["reason"] == "rejected by reviewer: too timid"
    assert rejected["review"]["source"] == "panel" and rejected["review"]["action"] == "reject"
    (decision,) = reviews(workspace, "decision")
    assert decision["source"] == "panel" and decision["note"] == "too timid"

    # The reviewer's edit is what runs, recorded as edited.
    await wait_for(lambda: pending_n(api, 2), timeout=60, what="#2 awaiting review")
    code, shown = await api("review", path="ws", tag="t1")
    edited = shown["pending"]["files"]["train.py"] + "# the reviewer's version\n"
    code, decided = await api(
        "review", "POST", {"path": "ws", "n": 2, "decision": "approve", "files": {"train.py": edited}}
    )
    assert code == 202, decided
    second = await wait_for(lambda: experiment(workspace, 2), timeout=60, what="#2 recorded")
    assert second["review"]["action"] == "edit" and second["review"]["source"] == "panel"
    assert "+# the reviewer's version" in second["diff"]

    # Off while #3 waits: #3 still waits for its decision; the state says off at once.
    await wait_for(lambda: pending_n(api, 3), timeout=60, what="#3 awaiting review")
    code, switched = await api("runs/step", "POST", {"path": "ws", "tag": "t1", "step": False})
    assert code == 200 and switched == {"tag": "t1", "step": False}

    async def off_and_waiting():
        status = await pending_n(api, 3)
        return status and status["step"] is False

    await wait_for(off_and_waiting, timeout=30, what="step off with #3 still pending")
    code, _ = await api("review", "POST", {"path": "ws", "n": 3, "decision": "approve"})
    assert code == 202
    fourth = await wait_for(lambda: experiment(workspace, 4), timeout=60, what="#4, unreviewed")
    assert "review" not in fourth
    assert [(r["n"], r["step"]) for r in reviews(workspace, "mode")] == [(1, True), (4, False)]

    code, _ = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 202
    await wait_for(lambda: supervisor.engine(workspace) is None, timeout=30, what="the engine to stop")
    code, refused = await api("runs/step", "POST", {"path": "ws", "step": True})
    assert code == 409
    assert refused["message"] == "no engine is running on run t1; choose Review each proposal before Start"
    code, refused = await api("review", "POST", {"path": "ws", "n": 5, "decision": "approve"})
    assert code == 409 and "no engine is running on run t1" in refused["message"]


async def test_start_in_step_mode_approve_all_and_nothing_pending(workspace, supervisor, api):
    code, reply = await api("review", path="ws")
    assert code == 404  # no run yet
    body = {"path": "ws", "proposer": "offline", "tag": "t1", "noise_runs": 1, "step": True, "max_experiments": 3}
    code, started = await api("runs", "POST", body)
    assert code == 202, started
    await wait_for(lambda: pending_n(api, 1), timeout=60, what="#1 awaiting review")
    code, _ = await api("review", "POST", {"path": "ws", "n": 1, "decision": "approve", "all": True})
    assert code == 202
    await wait_for(lambda: supervisor.engine(workspace) is None, timeout=60, what="the run to end")
    code, status = await api("runs/status", path="ws")
    assert status["state"] == "stopped" and status["step"] is False and status["pending"] is None
    assert [(r["n"], r["step"], r["source"]) for r in reviews(workspace, "mode")] == [(2, False, "panel")]
    assert [e.get("review", {}).get("action") for e in journal(workspace, "t1") if e["type"] == "experiment"] == [
        None,
        "approve",
        None,
        None,
    ]
    # Nothing awaits review: an answer saying so, not a 404 (the panel asks around every offer and decision).
    code, reply = await api("review", path="ws", tag="t1")
    assert code == 200 and reply["pending"] is None and reply["live"] is False


async def test_step_mode_is_refused_for_several_workers(jp_root_dir, engine_bundle, supervisor, api):
    from pathlib import Path

    make_workspace(Path(jp_root_dir) / "ws", sleep=2)
    body = {"path": "ws", "proposer": "offline", "tag": "t1", "noise_runs": 1, "workers": 2}
    code, started = await api("runs", "POST", body)
    assert code == 202, started
    code, refused = await api("runs/step", "POST", {"path": "ws", "step": True})
    assert code == 409 and refused["message"] == "step mode reviews one proposal at a time: this run has 2 workers"
    code, reply = await api("runs/step", "POST", {"path": "ws", "step": False})
    assert code == 200 and reply == {"tag": "t1", "step": False}


@pytest.mark.parametrize(
    "body,field",
    [
        ({}, "path"),
        ({"path": "ws"}, "step"),
        ({"path": "ws", "step": "yes"}, "step"),
        ({"path": "ws", "step": True, "tag": "../x"}, "tag"),
    ],
)
async def test_bad_step_bodies_are_refused(body, field, workspace, supervisor, api):
    code, reply = await api("runs/step", "POST", body)
    assert code == 400 and reply["field"] == field, reply


async def test_a_huge_decision_body_is_refused(workspace, supervisor, api):
    code, reply = await api("review", "POST", json.dumps({"path": "ws", "note": "x" * (17 * 1024 * 1024)}))
    assert code == 413, reply
