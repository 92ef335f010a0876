"""Secrets out of the engine's /proc/<pid>/environ, for engines the server starts: a training run
without the sandbox reads the initial environment of every process of its user there, so the
server hands the engine its secrets (the proposer's key, the token of the server its kernels run
through) on a pipe and starts it with an environment that holds none."""

import json
import os
import secrets
from pathlib import Path

from conftest import STAND_IN, alive, journal, make_workspace, wait_for
from jupyterlab_autoresearch.supervise.secrets import split_secrets
from jupyterlab_autoresearch.supervise.supervisor import Supervisor

# What train.py does first: reads /proc/<pid>/environ of every process it can see and of each of
# its ancestors up to init, and appends what it found (one JSON line a run) to $AR_PROBE_OUT.
PROBE = """\
import json as _json, os as _os
def _environ(pid):
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            return f.read().decode("latin-1").split("\\0")
    except OSError:
        return None
def _cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read().decode("latin-1").replace("\\0", " ")[:120]
    except OSError:
        return ""
def _ppid(pid):
    with open("/proc/%s/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
_chain, _pid = [], _os.getpid()
while _pid > 1:
    _pid = _ppid(_pid)
    _chain.append(_pid)
_seen = {p: _environ(p) for p in _os.listdir("/proc") if p.isdigit()}
_seen.update({str(p): _environ(p) for p in _chain})
with open(_os.environ["AR_PROBE_OUT"], "a") as _out:
    _cmd = {p: _cmdline(p) for p in _seen}
    _out.write(_json.dumps({"self": _os.getpid(), "ancestors": _chain, "environ": _seen, "cmdline": _cmd}) + "\\n")
"""


def probes(file: Path) -> list[dict]:
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]


def leaks(probe: dict, values: list[str]) -> list[str]:
    """Where each value was found: `pid (command line): NAME=…`."""
    return [
        f"{pid} ({probe['cmdline'].get(pid)}): {entry.split('=')[0]}=…"
        for pid, entries in probe["environ"].items()
        for entry in entries or []
        for value in values
        if value in entry
    ]


async def run_to_end(api, ws: Path, body: dict) -> int:
    code, started = await api("runs", "POST", body)
    assert code == 202, started

    async def ended():
        try:
            return journal(ws, body["tag"])[-1]["type"] == "run_end"
        except (OSError, IndexError):
            return False

    await wait_for(ended, timeout=120, what="the run to end")
    await wait_for(lambda: not alive(started["pid"]), timeout=30, what="the engine to exit")
    assert [r["status"] for r in journal(ws, body["tag"]) if r["type"] == "experiment"][:1] == ["keep"]
    return started["pid"]


async def test_a_run_without_the_sandbox_cannot_read_the_api_key_or_the_token_from_the_environ_of_an_engine_the_server_started(
    engine_bundle, jp_root_dir, supervisor, api, jp_serverapp, tmp_path
):
    key = f"sk-ant-api03-{secrets.token_hex(12)}"
    out = tmp_path / "probe.jsonl"
    ws = make_workspace(Path(jp_root_dir) / "sec", train=PROBE + STAND_IN.format(sleep=0.1))
    # As a user with a key does: ANTHROPIC_API_KEY in the server's environment (here set after
    # it started, so not in the server's own /proc/<pid>/environ, as it would be otherwise).
    os.environ.update({"ANTHROPIC_API_KEY": key, "AR_PROBE_OUT": str(out)})
    try:
        body = {"path": "sec", "proposer": "offline", "max_experiments": 0, "noise_runs": 1, "sandbox": "off"}
        engine = await run_to_end(api, ws, {**body, "tag": "sub"})
        # Through this server's kernel: the engine needs the server's token, and is handed it.
        kernel_engine = await run_to_end(api, ws, {**body, "tag": "ker", "kernel": "python3"})
    finally:
        del os.environ["ANTHROPIC_API_KEY"], os.environ["AR_PROBE_OUT"]
    token = jp_serverapp.identity_provider.token
    runs = probes(out)
    assert len(runs) == 2
    # The engine is the first run's parent's parent (its guard's parent), and its environ was readable.
    assert engine in runs[0]["ancestors"]
    assert f"AR_PROBE_OUT={out}" in runs[0]["environ"][str(engine)]
    assert leaks(runs[0], [key, token]) == []
    # A kernel the Jupyter server starts gets the server's environment (Jupyter's doing, for every
    # notebook), and so does what it starts (the run guard): the key the server holds is there,
    # not in the engine nor in the run. The token is nowhere.
    assert leaks(runs[1], [token]) == []
    assert runs[1]["environ"][str(kernel_engine)] is not None  # the engine's environ was readable
    kernel_run_leaks = leaks(runs[1], [key])
    assert not any(leak.startswith((f"{kernel_engine} ", f"{runs[1]['self']} ")) for leak in kernel_run_leaks)


def test_the_server_hands_the_engine_its_secrets_apart_from_its_environment(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "hub-token-0123456789")
    opts = {"kernel": "python3", "jupyter_token": "s3cret-token"}
    env = Supervisor._env()
    assert not any(name.startswith("ANTHROPIC_") or "TOKEN" in name for name in env)
    assert Supervisor._secrets(opts) == {
        "ANTHROPIC_API_KEY": "sk-ant-test-0123456789",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/",
        "JUPYTERHUB_API_TOKEN": "hub-token-0123456789",
        "JUPYTER_TOKEN": "s3cret-token",
    }
    # The server's own environment is left as the user started it.
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-test-0123456789"
    assert split_secrets({"PATH": "/bin", "JUPYTER_TOKEN": "t"}) == ({"PATH": "/bin"}, {"JUPYTER_TOKEN": "t"})
