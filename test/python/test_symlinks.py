"""Symlinks out of a workspace serve nothing: a training run (untrusted code running as the user)
can leave links in `.autoresearch/`, and a root can hold links to folders elsewhere. Real links,
a real server; the secret is a real file outside the server's root."""

import asyncio
import json
import os
from pathlib import Path

import pytest

from conftest import journal, wait_for

END = {
    "type": "run_end",
    "ts": "2026-01-01T00:00:00Z",
    "reason": "stop",
    "message": None,
    "best_commit": None,
    "best_metric": None,
}
START = {
    "type": "experiment_start",
    "ts": "2026-01-01T00:00:00Z",
    "n": 0,
    "parent_commit": "abc1234",
    "description": "d",
}
SECRET = "the-secret-outside-the-root"


@pytest.fixture
def secret(jp_root_dir):
    """A file beside the server's root, not in it."""
    file = Path(jp_root_dir).parent / "secret.txt"
    file.write_text(SECRET + "\n")
    return file


def make_run(ws: Path, tag: str, records: list[dict]) -> Path:
    run = ws / ".autoresearch" / tag
    (run / "logs").mkdir(parents=True, exist_ok=True)
    (run / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


@pytest.mark.parametrize("target", ["secret", "train.py", "dangling"])
async def test_a_log_that_links_out_of_autoresearch_is_not_served(target, secret, workspace, supervisor, api):
    run = make_run(workspace, "t", [END])
    link = {"secret": secret, "train.py": workspace / "train.py", "dangling": Path("/nonexistent/x.log")}[target]
    (run / "logs" / "0000.log").symlink_to(link)
    code, reply = await api("log", path="ws", tag="t", n=0)
    assert code in (403, 404), reply
    if target != "dangling":
        assert code == 403 and "outside ws/.autoresearch" in reply["message"], reply
    assert SECRET not in json.dumps(reply) and "LEARNING_RATE" not in json.dumps(reply)


async def test_a_fifo_in_a_log_s_place_does_not_hang_the_server(workspace, supervisor, api):
    run = make_run(workspace, "t", [END])
    os.mkfifo(run / "logs" / "0000.log")
    code, reply = await api("log", path="ws", tag="t", n=0)
    assert code == 403 and "not a regular file" in reply["message"], reply


async def test_a_run_folder_or_journal_that_links_out_is_no_run(
    jp_root_dir, secret, workspace, supervisor, api, jp_ws_fetch
):
    elsewhere = Path(jp_root_dir).parent / "elsewhere"
    make_run(elsewhere, "far", [END])
    (elsewhere / ".autoresearch" / "far" / "logs" / "0000.log").write_text(SECRET)
    (workspace / ".autoresearch").mkdir()
    (workspace / ".autoresearch" / "far").symlink_to(elsewhere / ".autoresearch" / "far")
    make_run(workspace, "linked", [])
    (workspace / ".autoresearch" / "linked" / "journal.jsonl").unlink()
    (workspace / ".autoresearch" / "linked" / "journal.jsonl").symlink_to(
        elsewhere / ".autoresearch" / "far" / "journal.jsonl"
    )

    code, runs = await api("runs", path="ws")
    assert code == 200 and runs["runs"] == [], runs
    for tag in ("far", "linked"):
        for route, extra in (("runs/status", {}), ("experiments", {}), ("log", {"n": 0})):
            code, reply = await api(route, path="ws", tag=tag, **extra)
            assert code in (403, 404), (route, tag, reply)
            assert SECRET not in json.dumps(reply)
    code, listed = await api("workspaces")
    (ws,) = [w for w in listed["workspaces"] if w["path"] == "ws"]
    assert ws["runs"] == []


async def test_an_autoresearch_folder_that_links_out_is_no_state(jp_root_dir, workspace, supervisor, api):
    elsewhere = Path(jp_root_dir).parent / "elsewhere"
    make_run(elsewhere, "far", [END])
    (workspace / ".autoresearch").symlink_to(elsewhere / ".autoresearch")
    code, runs = await api("runs", path="ws")
    assert code == 200 and runs["runs"] == [], runs
    code, reply = await api("runs/status", path="ws", tag="far")
    assert code in (403, 404), reply


async def test_the_event_stream_does_not_follow_a_log_out(secret, workspace, supervisor, jp_ws_fetch):
    run = make_run(workspace, "t", [START])
    (run / "logs" / "0000.log").symlink_to(secret)
    socket = await jp_ws_fetch("autoresearch", "events", params={"path": "ws", "tag": "t"})
    got = []
    try:
        while not any(m["type"] == "error" for m in got):
            got.append(json.loads(await asyncio.wait_for(socket.read_message(), timeout=5)))
    except TimeoutError:
        pass
    socket.close()
    assert SECRET not in json.dumps(got)
    (error,) = [m for m in got if m["type"] == "error"]
    assert "outside ws/.autoresearch" in error["message"]


async def test_workspaces_lists_no_folder_that_links_out_of_the_root(jp_root_dir, workspace, supervisor, api):
    outside = Path(jp_root_dir).parent / "outside-ws"
    outside.mkdir()
    (outside / "program.md").write_text("# not under the root\n")
    (Path(jp_root_dir) / "link-out").symlink_to(outside)
    (Path(jp_root_dir) / "deeper").mkdir()
    (Path(jp_root_dir) / "deeper" / "link-out").symlink_to(outside)
    code, listed = await api("workspaces")
    assert code == 200
    assert [w["path"] for w in listed["workspaces"]] == ["ws"]


async def test_a_planted_stop_file_link_is_replaced_not_written_through(secret, workspace, supervisor, api):
    code, started = await api("runs", "POST", {"path": "ws", "proposer": "offline", "tag": "s"})
    assert code == 202, started
    await wait_for(lambda: (workspace / ".autoresearch" / "engine.json").exists(), what="engine.json")
    (workspace / ".autoresearch" / "stop-requested").symlink_to(secret)
    code, reply = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 202, reply
    assert secret.read_text() == SECRET + "\n"
    await wait_for(lambda: journal(workspace, "s")[-1]["type"] == "run_end", timeout=30, what="the engine to stop")
    assert journal(workspace, "s")[-1]["reason"] == "stop"


async def test_an_engine_log_link_is_not_appended_to(secret, workspace, supervisor, api):
    (workspace / ".autoresearch").mkdir()
    (workspace / ".autoresearch" / "engine-s.log").symlink_to(secret)
    code, reply = await api("runs", "POST", {"path": "ws", "proposer": "offline", "tag": "s"})
    assert code == 409, reply
    assert "engine-s.log" in reply["message"] and "remove" in reply["message"]
    assert secret.read_text() == SECRET + "\n"
    assert not supervisor.children
