"""`watch()` in a real ipykernel, following a real engine's run from another process."""

import os
import signal
import subprocess
import sys
import time

import pytest
from jupyter_client.manager import start_new_kernel

from conftest import STAND_IN, kill_engine, make_workspace, write_long_run
from jupyterlab_autoresearch.node import engine_path

EXPERIMENT_MIME = "application/vnd.autoresearch.experiment+json"
VEGALITE_MIME = "application/vnd.vegalite.v5+json"


def start_engine(ws, *args):
    return subprocess.Popen(
        ["node", str(engine_path()), "run", str(ws), "--tag", "w1", "--proposer", "offline", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


@pytest.fixture
def kernel():
    km, kc = start_new_kernel(kernel_name="python3")
    yield km, kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def run_cell(kc, code, timeout=120, on_message=None):
    """Executes code; returns (reply status, the iopub messages of the cell)."""
    msg_id = kc.execute(code)
    messages = []
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_iopub_msg(timeout=max(1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if on_message:
            on_message(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = kc.get_shell_msg(timeout=30)
    return reply["content"]["status"], messages


def outputs(messages):
    """The cell's outputs by display id, as a notebook would hold them at the end (updates applied)."""
    shown = {}
    order = []
    for m in messages:
        if m["msg_type"] in ("display_data", "update_display_data"):
            did = m["content"]["transient"]["display_id"]
            if m["msg_type"] == "display_data":
                order.append(did)
            shown[did] = m["content"]["data"]
    return [shown[d] for d in order]


def test_watch_follows_a_run_to_its_end(engine_bundle, tmp_path, kernel):
    _, kc = kernel
    ws = make_workspace(tmp_path / "ws", sleep=1.0)
    engine = start_engine(ws, "--max-experiments", "3", "--python", sys.executable)
    try:
        # Wait for the run's journal, so watch() picks this run.
        for _ in range(200):
            if (ws / ".autoresearch" / "w1" / "journal.jsonl").is_file():
                break
            time.sleep(0.05)
        status, messages = run_cell(
            kc, f"from jupyterlab_autoresearch import watch\nwatch({str(ws)!r}, latest=2, interval=0.2)"
        )
        assert engine.wait(timeout=120) == 0, engine.stderr.read().decode()
    finally:
        kill_engine(ws)
    assert status == "ok"
    # It updated in place rather than appending: several updates, a bounded number of outputs.
    assert sum(m["msg_type"] == "update_display_data" for m in messages) >= 2
    final = outputs(messages)
    state, chart, *experiments = final
    assert "Run `w1`: stopped" in state["text/markdown"]
    assert "4 experiments" in state["text/markdown"]
    assert VEGALITE_MIME in chart and "image/svg+xml" in chart
    # The two newest, newest first, as the experiment renderer's bundles with their fallbacks.
    assert [e[EXPERIMENT_MIME]["n"] for e in experiments] == [3, 2]
    assert all("text/html" in e for e in experiments)
    assert not [m for m in messages if m["msg_type"] == "error"]


def test_watch_shows_a_run_of_2000_experiments(engine_bundle, tmp_path, kernel):
    """Past many pipe buffers (the export is over 1 MB): the state, the chart and the newest, whole."""
    _, kc = kernel
    ws = make_workspace(tmp_path / "ws")
    write_long_run(ws, 2000, tag="w1")
    status, messages = run_cell(kc, f"from jupyterlab_autoresearch import watch\nwatch({str(ws)!r}, latest=3)")
    assert status == "ok", [m["content"] for m in messages if m["msg_type"] == "error"]
    state, chart, *experiments = outputs(messages)
    assert "Run `w1`: stopped" in state["text/markdown"] and "2000 experiments" in state["text/markdown"]
    assert "best val_bpb 0.801000" in state["text/markdown"] and "(#1990)" in state["text/markdown"]
    assert VEGALITE_MIME in chart and "image/svg+xml" in chart
    assert [e[EXPERIMENT_MIME]["n"] for e in experiments] == [1999, 1998, 1997]


def test_watch_ends_cleanly_when_interrupted_and_leaves_the_run_going(engine_bundle, tmp_path, kernel):
    km, kc = kernel
    ws = make_workspace(tmp_path / "ws", train=STAND_IN.format(sleep=60))
    engine = start_engine(ws, "--python", sys.executable)
    try:
        for _ in range(400):
            if (ws / ".autoresearch" / "w1" / "journal.jsonl").is_file():
                break
            time.sleep(0.05)
        interrupted = []

        def interrupt_once_shown(msg):
            if msg["msg_type"] == "display_data" and not interrupted:
                interrupted.append(True)
                km.interrupt_kernel()

        status, messages = run_cell(
            kc, f"from jupyterlab_autoresearch import watch\nwatch({str(ws)!r}, interval=0.2)", 60, interrupt_once_shown
        )
        assert interrupted
        assert status == "ok"
        assert not [m for m in messages if m["msg_type"] == "error"]
        state = outputs(messages)[0]
        assert "Run `w1`: running" in state["text/markdown"]
        assert "stopped watching; the run goes on" in state["text/markdown"]
        assert engine.poll() is None, "watch() must not stop the run"
    finally:
        kill_engine(ws)
        engine.send_signal(signal.SIGKILL) if engine.poll() is None else None
        engine.wait(timeout=30)


def test_watch_names_what_is_wrong(tmp_path):
    from jupyterlab_autoresearch import watch

    with pytest.raises(FileNotFoundError, match="no runs in .* autoresearch run"):
        watch(tmp_path)
    with pytest.raises(ValueError, match="latest must be at least 1"):
        watch(tmp_path, latest=0)
    assert os.path.isdir(tmp_path)
