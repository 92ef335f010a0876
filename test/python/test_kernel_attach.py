"""A run started with `kernel_id` trains in that running kernel of this server (a notebook's, say),
which the engine attaches to and leaves running; what it may name is checked before anything starts."""

import json
import sys
from pathlib import Path

from conftest import STAND_IN, alive, journal, make_workspace, wait_for
from jupyterlab_autoresearch.supervise.engine_commands import server_url

# The stand-in, printing the process ids above it: the kernel's is among them when it ran there.
ANCESTRY = STAND_IN.replace(
    'print("---")',
    "import os\n"
    "pid = os.getpid()\n"
    "while pid > 1:\n"
    "    print('ANCESTOR', pid)\n"
    "    pid = int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])\n"
    'print("---")',
)


async def start_kernel(jp_fetch, name: str = "python3") -> str:
    """Starts a kernel through the server's REST API, as JupyterLab does for a notebook; returns its id."""
    response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": name}))
    return json.loads(response.body)["id"]


async def kernel_ids(jp_fetch) -> list[str]:
    return [k["id"] for k in json.loads((await jp_fetch("api", "kernels")).body)]


async def test_kernel_id_must_name_a_running_python_kernel_of_this_server(
    workspace, supervisor, api, jp_fetch, jp_data_dir
):
    code, refused = await api("runs", "POST", {"path": "ws", "kernel_id": "0f6c2a4e-no-such-kernel"})
    assert code == 400 and refused["field"] == "kernel_id", refused
    assert "no running kernel" in refused["message"] and "GET /api/kernels" in refused["message"]
    # Resume goes through the same check.
    code, refused = await api("runs/resume", "POST", {"path": "ws", "kernel_id": "0f6c2a4e-no-such-kernel"})
    assert code == 400 and "no running kernel" in refused["message"], refused

    kernel_id = await start_kernel(jp_fetch)
    code, refused = await api("runs", "POST", {"path": "ws", "kernel_id": kernel_id, "kernel": "python3"})
    assert code == 400 and "exclude each other" in refused["message"], refused
    code, refused = await api("runs", "POST", {"path": "ws", "kernel_id": kernel_id, "workers": 2})
    assert code == 400 and "workers 2" in refused["message"] and "send kernel" in refused["message"], refused

    # A kernel of a kernelspec that is not Python (here an ipykernel whose spec says otherwise).
    spec = Path(jp_data_dir) / "kernels" / "not-python"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Not Python", "language": "r"}))
    other = await start_kernel(jp_fetch, "not-python")
    code, refused = await api("runs", "POST", {"path": "ws", "kernel_id": other})
    assert code == 400 and "not a Python one" in refused["message"], refused

    # None of these started an engine.
    assert supervisor.children == {} and not (workspace / ".autoresearch" / "engine.json").exists()


async def test_a_run_attached_to_a_kernel_trains_in_it_and_leaves_it_running(
    engine_bundle, jp_root_dir, supervisor, api, jp_fetch, jp_serverapp
):
    ws = make_workspace(Path(jp_root_dir) / "attach", train=ANCESTRY.format(sleep=0.3))
    kernel_id = await start_kernel(jp_fetch)
    kernel_pid = jp_serverapp.kernel_manager.get_kernel(kernel_id).provisioner.pid
    body = {
        "path": "attach",
        "proposer": "offline",
        "tag": "a",
        "kernel_id": kernel_id,
        "max_experiments": 0,
        "noise_runs": 1,
        # Out of a sandbox's pid namespace, so the run sees the kernel's pid among its ancestors.
        "sandbox": "off",
    }
    code, started = await api("runs", "POST", body)
    assert code == 202, started
    pid = started["pid"]
    token = jp_serverapp.identity_provider.token
    assert token.encode() not in Path(f"/proc/{pid}/environ").read_bytes()  # handed over on a pipe

    async def ended():
        try:
            return journal(ws, "a")[-1]["type"] == "run_end"
        except (OSError, IndexError):
            return False

    await wait_for(ended, timeout=90, what="the run in the attached kernel to end")
    await wait_for(lambda: not alive(pid), timeout=30, what="the engine to exit")

    # The engine's command line: the kernel executor attached by id on this server's URL; no token, no --kernel.
    first = (ws / started["log"].split("/", 1)[1]).read_text().splitlines()[0]
    url = server_url(jp_serverapp.ip, jp_serverapp.port, jp_serverapp.base_url)
    assert "--executor kernel" in first and f"--kernel-id {kernel_id}" in first and f"--server-url {url}" in first
    assert " --kernel " not in first and token not in first

    # train.py ran under that very kernel's process.
    (run,) = [r for r in journal(ws, "a") if r["type"] == "run"]
    log = Path(run["log_path"]).read_text()
    ancestors = {int(line.split()[1]) for line in log.splitlines() if line.startswith("ANCESTOR ")}
    assert kernel_pid in ancestors, log
    assert [r["status"] for r in journal(ws, "a") if r["type"] == "experiment"] == ["keep"]

    # The engine left the kernel running, and started none of its own.
    assert await kernel_ids(jp_fetch) == [kernel_id]
