"""A run started with a `kernel` option trains through this server's own kernels (the kernel executor)."""

import json
import os
from pathlib import Path

from conftest import STAND_IN, alive, journal, make_workspace, wait_for
from jupyterlab_autoresearch.supervise.engine_commands import server_url
from jupyterlab_autoresearch.supervise.supervisor import Supervisor


def test_the_kernel_option_becomes_kernel_executor_flags_and_the_token_stays_out_of_argv():
    opts = {
        "kernel": "gpu",
        "server_url": "http://127.0.0.1:8888/lab%20x/",
        "jupyter_token": "s3cret-token",
        "max_experiments": 2,
    }
    flags = Supervisor._flags(opts)
    assert flags[flags.index("--executor") + 1] == "kernel"
    assert flags[flags.index("--kernel") + 1] == "gpu"
    assert flags[flags.index("--server-url") + 1] == "http://127.0.0.1:8888/lab%20x/"
    assert not any("s3cret" in f for f in flags)
    assert Supervisor._secrets(opts)["JUPYTER_TOKEN"] == "s3cret-token"
    assert "JUPYTER_TOKEN" not in Supervisor._env()
    # Without a kernel the subprocess executor runs and no token is handed down.
    assert "--executor" not in Supervisor._flags({"max_experiments": 2})


def test_executor_slurm_passes_as_is_once_and_no_token_goes_with_it():
    flags = Supervisor._flags({"executor": "slurm", "max_experiments": 2})
    assert flags.count("--executor") == 1 and flags[flags.index("--executor") + 1] == "slurm"
    assert "--kernel" not in flags and "--server-url" not in flags
    assert "JUPYTER_TOKEN" not in Supervisor._secrets({"executor": "slurm"})
    # A kernel is the kernel executor, said once, whatever executor the starter let through with it.
    flags = Supervisor._flags({"executor": "kernel", "kernel": "gpu", "server_url": "http://127.0.0.1:1/"})
    assert flags.count("--executor") == 1 and flags[flags.index("--executor") + 1] == "kernel"


def test_the_server_url_is_the_loopback_address_unless_the_server_listens_on_one_address():
    assert server_url("", 8888, "/") == "http://127.0.0.1:8888/"
    assert server_url("0.0.0.0", 8888, "/base/") == "http://127.0.0.1:8888/base/"
    assert server_url("localhost", 9000, "/base", https=True) == "https://127.0.0.1:9000/base/"
    assert server_url("::", 8888, "/") == "http://[::1]:8888/"
    assert server_url("10.1.2.3", 8888, "/") == "http://10.1.2.3:8888/"
    assert server_url("fe80::1", 8888, "/") == "http://[fe80::1]:8888/"


async def test_a_run_with_a_kernel_trains_through_this_servers_kernel(
    workspace, supervisor, api, jp_serverapp, jp_fetch
):
    code, started = await api(
        "runs", "POST", {"path": "ws", "proposer": "offline", "tag": "k", "kernel": "python3", "max_experiments": 1}
    )
    assert code == 202, started
    pid = started["pid"]
    # The engine is handed the token on a pipe: never in its environ, which a run could read.
    token = jp_serverapp.identity_provider.token
    assert token.encode() not in Path(f"/proc/{pid}/environ").read_bytes()

    async def ended():
        try:
            return journal(workspace, "k")[-1]["type"] == "run_end"
        except (OSError, IndexError):
            return False

    await wait_for(ended, timeout=90, what="the run through the kernel to end")
    await wait_for(lambda: not alive(pid), timeout=30, what="the engine to exit")
    records = journal(workspace, "k")
    assert [r["status"] for r in records if r["type"] == "experiment"] != []
    assert all(r["status"] in ("keep", "discard") for r in records if r["type"] == "experiment"), records
    assert records[-1]["reason"] == "max-experiments"

    # The engine's command line: the kernel executor on this server's own URL, and no token.
    first = (workspace / started["log"].split("/", 1)[1]).read_text().splitlines()[0]
    url = server_url(jp_serverapp.ip, jp_serverapp.port, jp_serverapp.base_url)
    assert "--executor kernel" in first and "--kernel python3" in first and f"--server-url {url}" in first
    assert token not in first

    # The kernel the engine started went with it.
    kernels = json.loads((await jp_fetch("api", "kernels")).body)
    assert kernels == []


ENV_PRINTING = STAND_IN.replace(
    'print("---")', 'import os\nfor k, v in sorted(os.environ.items()):\n    print("ENV", k, v)\nprint("---")'
)


async def test_a_panel_run_through_a_kernel_keeps_the_key_and_the_token_from_train_py(
    engine_bundle, jp_root_dir, supervisor, api, jp_serverapp
):
    # What a user with a key does: ANTHROPIC_API_KEY in the server's environment, so in the
    # engine's and in every kernel the server starts.
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-test-never-in-a-log-0123456789"
    try:
        make_workspace(Path(jp_root_dir) / "envws", train=ENV_PRINTING.format(sleep=0.1))
        code, started = await api(
            "runs",
            "POST",
            {
                "path": "envws",
                "proposer": "offline",
                "tag": "k",
                "kernel": "python3",
                "max_experiments": 0,
                "noise_runs": 1,
            },
        )
        assert code == 202, started

        async def ended():
            try:
                return journal(Path(jp_root_dir) / "envws", "k")[-1]["type"] == "run_end"
            except (OSError, IndexError):
                return False

        await wait_for(ended, timeout=90, what="the run through the kernel to end")
    finally:
        del os.environ["ANTHROPIC_API_KEY"]
    (run,) = [r for r in journal(Path(jp_root_dir) / "envws", "k") if r["type"] == "run"]
    log = Path(run["log_path"]).read_text()
    assert "ENV AUTORESEARCH_SEED" in log  # the run's own environment did arrive
    assert "sk-ant-test" not in log and "ANTHROPIC" not in log
    assert jp_serverapp.identity_provider.token not in log
