"""Supervising engines: kill -9 and resume, finding an engine after a restart, SIGKILL after the grace."""

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import alive, git_status, journal, make_workspace, wait_for
from jupyterlab_autoresearch import errors
from jupyterlab_autoresearch.node import engine_path
from jupyterlab_autoresearch.read.journal import JournalError, JournalTail
from jupyterlab_autoresearch.read.journal_schema import problem
from jupyterlab_autoresearch.routes import validate
from jupyterlab_autoresearch.routes.validate import ApiError
from jupyterlab_autoresearch.routes.web_errors import HTTP_STATUS, api_error
from jupyterlab_autoresearch.supervise.engine_commands import scrub
from jupyterlab_autoresearch.supervise.engine_info import read_engine_info
from jupyterlab_autoresearch.supervise.run_options import proposers, run_options
from jupyterlab_autoresearch.supervise.supervisor import Supervisor


async def experiments(api, path, tag):
    code, page = await api("experiments", path=path, tag=tag, limit=1000)
    assert code == 200, page
    return page["experiments"]


async def test_a_killed_engine_shows_as_died_and_resumes(workspace, supervisor, api):
    code, started = await api("runs", "POST", {"path": "ws", "proposer": "offline", "tag": "k9"})
    assert code == 202, started
    await wait_for(lambda: _count(workspace, "k9") >= 2, what="2 experiments")

    os.kill(started["pid"], signal.SIGKILL)
    code, status = await wait_for(lambda: _status_is(api, "died"), timeout=20, what="state died")
    assert status["pid"] is None and status["resumable"] is True and status["end"] is None
    done = status["experiments"]

    code, resumed = await api("runs/resume", "POST", {"path": "ws"})
    assert code == 202, resumed
    assert resumed["tag"] == "k9" and resumed["pid"] != started["pid"]
    await wait_for(lambda: _count(workspace, "k9") >= done + 2, what="experiments after the resume")
    records = journal(workspace, "k9")
    assert [r["resume"] for r in records if r["type"] == "run_start"] == [False, True]

    code, status = await api("runs/status", path="ws", tag="k9")
    assert status["state"] == "running" and status["pid"] == resumed["pid"]
    code, _ = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 202
    await wait_for(lambda: not alive(resumed["pid"]), timeout=30, what="the engine to exit")
    assert journal(workspace, "k9")[-1]["type"] == "run_end"
    assert git_status(workspace) == ""


def _count(ws: Path, tag: str) -> int:
    try:
        return sum(1 for r in journal(ws, tag) if r["type"] == "experiment")
    except FileNotFoundError:
        return 0


async def _status_is(api, state: str):
    code, status = await api("runs/status", path="ws")
    return (code, status) if status.get("state") == state else None


async def test_after_a_server_restart_a_running_engine_is_found_and_stopped(workspace, supervisor, api, jp_serverapp):
    # Started from a terminal, not by this server: the server knows it only from engine.json.
    engine = subprocess.Popen(
        ["node", str(engine_path()), "run", str(workspace), "--proposer", "offline", "--tag", "cli"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        await wait_for(lambda: _count(workspace, "cli") >= 1, what="the CLI engine's first experiment")
        # A restarted server has a fresh supervisor that never saw this engine start.
        fresh = Supervisor(supervisor.root)
        assert fresh.engine(workspace).pid == engine.pid
        jp_serverapp.web_app.settings["autoresearch_supervisor"] = fresh

        code, status = await api("runs/status", path="ws")
        assert (code, status["state"], status["tag"], status["pid"]) == (200, "running", "cli", engine.pid)
        code, listed = await api("workspaces")
        (ws,) = [w for w in listed["workspaces"] if w["path"] == "ws"]
        assert ws["engine"]["pid"] == engine.pid and ws["runs"] == ["cli"]
        code, refused = await api("runs", "POST", {"path": "ws", "proposer": "offline"})
        assert code == 409

        code, _ = await api("runs/stop", "POST", {"path": "ws"})
        assert code == 202
        assert engine.wait(timeout=30) == 0
        end = journal(workspace, "cli")[-1]
        assert end["type"] == "run_end" and end["reason"] == "stop"
        code, status = await api("runs/status", path="ws")
        assert status["state"] == "stopped"
        assert git_status(workspace) == ""
    finally:
        jp_serverapp.web_app.settings["autoresearch_supervisor"] = supervisor
        fresh.close()
        if engine.poll() is None:
            engine.kill()
            engine.wait()


STUBBORN = """\
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
LEARNING_RATE = 0.001
print("step 1 | loss 3.2500", flush=True)
if os.path.exists("hang"):
    open("train.pid", "w").write(str(os.getpid()))
    time.sleep(60)
time.sleep(0.3)
print("---")
print("val_bpb: 1.0")
"""


async def test_an_engine_that_outlives_the_grace_is_killed_with_its_training_run(
    jp_root_dir, engine_bundle, supervisor, api
):
    ws = make_workspace(Path(jp_root_dir) / "stubborn", train=STUBBORN)
    with (ws / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write("train.pid\nhang\n")
    supervisor.stop_grace_s = 1.0
    code, started = await api("runs", "POST", {"path": "stubborn", "proposer": "offline", "tag": "s"})
    assert code == 202, started
    await wait_for(lambda: _count(ws, "s") >= 1, what="the baseline")
    (ws / "hang").write_text("")  # from now on a training run ignores SIGTERM and hangs
    await wait_for(lambda: _training_pid(ws) is not None, what="the training run")
    # The run's group as the engine recorded it: a sandboxed run's own pid (train.pid) is its
    # pid namespace's, not this host's.
    group = json.loads((ws / ".autoresearch" / "engine.json").read_text())["run_pgid"]
    assert group and _group_alive(group)

    # A wedged engine: SIGTERM stays pending while it is stopped; only SIGKILL ends it.
    os.kill(started["pid"], signal.SIGSTOP)
    code, _ = await api("runs/stop", "POST", {"path": "stubborn"})
    assert code == 202
    await wait_for(lambda: not alive(started["pid"]), timeout=10, what="SIGKILL of the engine")
    # Its training run has its own process group, which the wedged engine can no longer kill.
    await wait_for(lambda: not _group_alive(group), timeout=5, what="SIGKILL of the training run's group")

    # A SIGKILLed engine's threads take a moment to exit before it can be reaped (its main
    # thread already shows as a zombie), so the state settles rather than flips at once.
    async def died():
        _, status = await api("runs/status", path="stubborn")
        return status if status["state"] != "running" else None

    status = await wait_for(died, timeout=5, what="the run's state to leave 'running'")
    assert status["state"] == "died" and status["resumable"]
    assert not (ws / ".autoresearch" / "stop-requested").exists()


def _group_alive(pgid: int) -> bool:
    """Whether any live (not zombie) process is in process group pgid."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def _training_pid(ws: Path):
    try:
        return int((ws / "train.pid").read_text())
    except (OSError, ValueError):
        return None


def test_the_journal_is_read_incrementally_and_validated(tmp_path):
    file = tmp_path / "journal.jsonl"
    start = {"type": "experiment_start", "ts": "t", "n": 0, "parent_commit": "abcdef0", "description": "baseline"}
    tail = JournalTail(file)
    assert tail.read_new() == []
    file.write_text(json.dumps(start) + "\n" + json.dumps(start)[:20])
    assert tail.read_new() == [start]  # the unfinished line waits for its newline
    with file.open("a") as f:
        f.write(json.dumps(start)[20:] + "\n")
    assert tail.read_new() == [start]
    with file.open("a") as f:
        f.write(json.dumps({**start, "n": "one"}) + "\n")
    with pytest.raises(JournalError, match="line 3 is not a valid journal record: experiment_start.n is string"):
        tail.read_new()
    with pytest.raises(JournalError, match="line 3"):
        tail.read_new()  # never skipped


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            "ServerApp": {"jpserver_extensions": {"jupyterlab_autoresearch": True}},
            "Autoresearch": {"stop_grace_s": 3, "start_wait_s": 0.5},
        }
    ],
)
def test_the_supervisor_timers_come_from_the_server_config(jp_serverapp):
    sup = jp_serverapp.web_app.settings["autoresearch_supervisor"]
    assert (sup.stop_grace_s, sup.start_wait_s) == (3.0, 0.5)
    assert sup.root == Path(jp_serverapp.root_dir).resolve()


def test_run_options_become_engine_flags():
    flags = Supervisor._flags({"proposer": "offline", "workers": 2, "max_experiments": 6, "pipeline": False})
    assert flags[flags.index("--workers") + 1] == "2"
    assert flags[flags.index("--max-experiments") + 1] == "6"
    assert "--workers" not in Supervisor._flags({"proposer": "offline"})


def test_every_run_option_the_declaration_gives_the_server_becomes_its_flag():
    flags = Supervisor._flags(
        {"tag": "t1", "noise_runs": 1, "keep_sigma": 0.5, "confirm_runs": 0, "resume": True, "pipeline": True}
    )
    assert flags == ["--tag", "t1", "--noise-runs", "1", "--keep-sigma", "0.5", "--confirm-runs", "0", "--resume"]
    # A switch's flag only when it differs from its default.
    assert Supervisor._flags({"resume": False, "pipeline": False}) == ["--no-pipeline"]
    # Each option the server takes from a client is a field of POST /runs, checked by its kind.
    body_keys = [o["key"] for o in run_options() if o["server"] == "body"]
    assert list(validate.run_fields()) == ["path", *body_keys]
    assert {"noise_runs", "keep_sigma", "confirm_runs", "workers", "tag"} <= set(body_keys)
    assert "resume" not in validate.resume_fields() and "server_url" not in validate.run_fields()
    assert {o["kind"] for o in run_options()} - {"choice"} <= set(validate.KIND_CHECKS)


def test_journal_records_of_several_workers():
    start = {"type": "experiment_start", "ts": "t", "n": 1, "parent_commit": "abcdef0", "description": "a", "worker": 2}
    assert problem(start) is None
    assert problem({k: v for k, v in start.items() if k != "worker"}) is None  # one worker: no field
    assert "experiment_start.worker is 0" in problem({**start, "worker": 0})
    assert 'worker is string "2"' in problem({**start, "worker": "2"})
    # Each worker's experiment in flight is the engine's to find (state.json, see test_run_state.py).


def test_every_worker_s_training_run_is_found_for_the_sigkill(tmp_path):
    state = tmp_path / ".autoresearch"
    state.mkdir()
    (state / "engine.json").write_text(
        json.dumps({"pid": 1, "tag": "t", "started": "s", "run_pgid": 40, "run_pgids": [40, 41]})
    )
    assert read_engine_info(tmp_path).run_groups() == [40, 41]
    (state / "engine.json").write_text(json.dumps({"pid": 1, "tag": "t", "started": "s", "run_pgid": None}))
    assert read_engine_info(tmp_path).run_groups() == []
    # Identities come with the engines that record them (see test_signals.py); junk is dropped.
    raw = {
        "pid": 1,
        "tag": "t",
        "started": "s",
        "run_pgid": 40,
        "run_pgids": [40, "x", -3, 41],
        "identity": {"boot": "b", "start": "12"},
        "run_identities": {"40": {"boot": "b", "start": "9"}, "41": "no", "x": {}},
    }
    (state / "engine.json").write_text(json.dumps(raw))
    info = read_engine_info(tmp_path)
    assert info.run_groups() == [40, 41]
    assert info.identity == {"boot": "b", "start": "12"} and info.run_identities == {40: {"boot": "b", "start": "9"}}


def test_a_bad_line_repaired_in_place_is_read_again(tmp_path):
    file = tmp_path / "journal.jsonl"
    start = {"type": "experiment_start", "ts": "t", "n": 0, "parent_commit": "abcdef0", "description": "baseline"}
    file.write_text(json.dumps(start) + "\n" + json.dumps({**start, "n": "one"}) + "\n")
    tail = JournalTail(file)
    with pytest.raises(JournalError, match="line 2") as bad:
        tail.read_new()
    assert bad.value.records == [start]
    inode = file.stat().st_ino
    file.write_text(json.dumps(start) + "\n" + json.dumps({**start, "n": 1}) + "\n")  # rewritten in place
    assert file.stat().st_ino == inode
    assert tail.read_new() == [{**start, "n": 1}]


def test_proposers_and_their_secrets_come_from_their_declarations(monkeypatch):
    declared = proposers()
    assert {"offline", "claude"} <= set(declared)
    check, required = validate.run_fields()["proposer"]
    assert not required and [check("proposer", name) for name in declared] == list(declared)
    with pytest.raises(ApiError, match="proposer must be one of"):
        check("proposer", "gpt")
    # Every proposer's credential variables are scrubbed from what is relayed to a client.
    names = [name for info in declared.values() for name in info["key_env"]]
    assert "ANTHROPIC_API_KEY" in names
    for i, name in enumerate(names):
        monkeypatch.setenv(name, f"secret-value-{i}-0123456789")
    text = " ".join(f"secret-value-{i}-0123456789" for i in range(len(names)))
    assert scrub(text) == " ".join(["[redacted]"] * len(names))


def test_domain_errors_have_their_http_status_in_one_table():
    assert api_error(errors.EngineRunning("busy")).status_code == 409
    assert api_error(errors.NoEngine("none")).status_code == 404
    assert api_error(errors.Unavailable("no node")).status_code == 503
    refused = api_error(errors.BadRequest("no such template", "path"))
    assert (refused.status_code, refused.message, refused.field) == (400, "no such template", "path")
    # Every kind the domain raises is in the table (a new one must be given its status there).
    kinds = [k for k in vars(errors).values() if isinstance(k, type) and issubclass(k, errors.DomainError)]
    assert set(kinds) == set(HTTP_STATUS)
