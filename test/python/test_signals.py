"""The server signals a process named in engine.json only when it is the engine (or training run)
that was recorded: same boot, same start time. Real processes, real signals, a real server."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import alive, wait_for

# A process that a check by command line alone takes for an engine: its argv ends in the bundle's
# name and says `run` and the workspace. `stubborn` ignores SIGTERM, as a wedged engine would.
FAKE = "import signal, sys, time\nif 'stubborn' in sys.argv: signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(300)\n"


def spawn(*argv: str, stubborn: bool = False) -> subprocess.Popen:
    """A sleeping process in its own process group (so pgid == pid, as a training run's)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", FAKE, *argv, *(["stubborn"] if stubborn else [])], start_new_session=True
    )
    # Popen returns once exec succeeded; wait until the interpreter runs our code (argv set, handler in place).
    time.sleep(0.3)
    return proc


def proc_identity(pid: int) -> dict:
    """What the engine records of a process, read here straight from /proc (the format engine.json uses)."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    stat = Path(f"/proc/{pid}/stat").read_text()
    return {"boot": boot, "start": stat.rsplit(")", 1)[1].split()[19]}


def write_engine_json(ws: Path, **fields) -> None:
    state = ws / ".autoresearch"
    state.mkdir(exist_ok=True)
    (state / "engine.json").write_text(
        json.dumps({"tag": "t", "started": "2026-01-01T00:00:00Z", "run_pgid": None, **fields})
    )


@pytest.fixture
def procs():
    """Processes a test started; each is killed and reaped afterwards."""
    started: list[subprocess.Popen] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


@needs_proc
def test_an_identity_is_the_boot_and_the_start_time_of_a_live_process(procs):
    from jupyterlab_autoresearch.supervise import procid

    proc = spawn()
    procs.append(proc)
    assert procid.identity(proc.pid) == proc_identity(proc.pid)
    assert procid.same_process(proc.pid, proc_identity(proc.pid))
    assert not procid.same_process(proc.pid, {**proc_identity(proc.pid), "boot": "another-boot"})
    assert not procid.same_process(proc.pid, {**proc_identity(proc.pid), "start": "1"})
    assert not procid.same_process(proc.pid, None)
    # A zombie (ended, not yet reaped) is no process to signal.
    proc.kill()
    time.sleep(0.3)
    assert Path(f"/proc/{proc.pid}").exists()
    assert procid.identity(proc.pid) is None
    proc.wait()
    assert procid.identity(proc.pid) is None


def _wrong_boot(pid):
    # After a reboot the same pid (and even start tick) belongs to a process of another boot.
    return {**proc_identity(pid), "boot": "00000000-0000-0000-0000-000000000000"}


@needs_proc
@pytest.mark.parametrize(
    "identity",
    [
        pytest.param(lambda pid: None, id="no-identity"),
        pytest.param(_wrong_boot, id="another-boot"),
        pytest.param(lambda pid: {**proc_identity(pid), "start": "1"}, id="another-start"),
        pytest.param(lambda pid: "garbage", id="garbage"),
    ],
)
async def test_a_stale_or_forged_engine_json_makes_no_process_an_engine(identity, workspace, supervisor, api, procs):
    fake = spawn("/opt/autoresearch/engine/autoresearch.cjs", "run", str(workspace))
    victim = spawn()  # a process group that has nothing to do with autoresearch
    procs += [fake, victim]
    ident = identity(fake.pid)
    write_engine_json(
        workspace,
        pid=fake.pid,
        run_pgid=victim.pid,
        run_pgids=[victim.pid],
        **({"identity": ident} if ident is not None else {}),
    )
    supervisor.stop_grace_s = 0.5

    code, listed = await api("workspaces")
    (ws,) = [w for w in listed["workspaces"] if w["path"] == "ws"]
    assert ws["engine"] is None
    code, reply = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 404, reply
    assert "no engine is running" in reply["message"]
    time.sleep(1.0)  # past the grace: no escalation either
    assert alive(fake.pid) and alive(victim.pid)
    assert not supervisor._escalations


@needs_proc
async def test_an_engine_of_another_workspace_is_not_this_one_s(jp_root_dir, workspace, supervisor, api, procs):
    other = Path(jp_root_dir) / "other"
    other.mkdir()
    fake = spawn("/opt/autoresearch/engine/autoresearch.cjs", "run", str(other))
    procs.append(fake)
    write_engine_json(workspace, pid=fake.pid, identity=proc_identity(fake.pid))
    code, reply = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 404, reply
    assert alive(fake.pid)


@needs_proc
async def test_the_escalation_kills_only_the_recorded_engine_and_runs(workspace, supervisor, api, procs):
    # An engine recorded with its identity (as the engine writes it), wedged: it ignores SIGTERM.
    engine = spawn("/opt/autoresearch/engine/autoresearch.cjs", "run", str(workspace), stubborn=True)
    genuine = spawn(stubborn=True)  # its training run, recorded with its identity
    unrecorded = spawn()  # a group named without an identity (an old engine.json, or forged)
    reused = spawn()  # a group whose number was reused since it was recorded
    procs += [engine, genuine, unrecorded, reused]
    write_engine_json(
        workspace,
        pid=engine.pid,
        identity=proc_identity(engine.pid),
        run_pgid=genuine.pid,
        run_pgids=[genuine.pid, unrecorded.pid, reused.pid],
        run_identities={
            str(genuine.pid): proc_identity(genuine.pid),
            str(reused.pid): {**proc_identity(reused.pid), "start": "1"},
        },
    )
    supervisor.stop_grace_s = 0.5

    code, status = await api("runs/status", path="ws")
    assert (code, status["state"], status["pid"]) == (200, "running", engine.pid), status
    code, reply = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 202, reply
    assert reply["pid"] == engine.pid and reply["signal"] == "SIGTERM"
    await wait_for(lambda: not alive(engine.pid), timeout=10, what="SIGKILL of the wedged engine")
    await wait_for(lambda: not alive(genuine.pid), timeout=5, what="SIGKILL of its recorded training run")
    time.sleep(0.5)
    assert alive(unrecorded.pid) and alive(reused.pid)
    assert not (workspace / ".autoresearch" / "stop-requested").exists()


@needs_proc
async def test_the_server_s_own_engine_is_stopped_without_an_identity(workspace, supervisor, api):
    # An engine this server started is its child: its pid cannot be reused before the server
    # reaps it, so an engine.json without identity (an engine older than identities) still counts.
    code, started = await api("runs", "POST", {"path": "ws", "proposer": "offline", "tag": "own"})
    assert code == 202, started
    info_file = workspace / ".autoresearch" / "engine.json"
    await wait_for(lambda: info_file.exists(), what="engine.json")
    await wait_for(
        lambda: json.loads(info_file.read_text() or "{}").get("pid") == started["pid"], what="the engine's pid"
    )
    raw = json.loads(info_file.read_text())
    raw.pop("identity", None)
    info_file.write_text(json.dumps(raw))
    code, reply = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 202, reply
    await wait_for(lambda: not alive(started["pid"]), timeout=30, what="the engine to exit")


def test_signal_if_same_refuses_a_reused_pid(procs):
    from jupyterlab_autoresearch.supervise import procid

    proc = spawn()
    procs.append(proc)
    ident = procid.identity(proc.pid)
    assert not procid.signal_if_same(proc.pid, {**ident, "start": "1"}, signal.SIGTERM)
    assert alive(proc.pid)
    assert procid.signal_if_same(proc.pid, ident, signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM
    assert not procid.signal_if_same(proc.pid, ident, signal.SIGTERM)
