"""The package as a user installs it: the wheel, with the `[node]` extra, in a fresh venv whose PATH
has no Node.js at all; then `autoresearch init`, one experiment, and the server extension's status route."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TRAIN = """LEARNING_RATE = 0.001
print("---")
print("val_bpb:          %.6f" % (1.0 + abs(LEARNING_RATE - 0.004)))
print("training_seconds: 0.1")
"""


def run(*args, **kwargs):
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{args[:3]}… exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readme_install_line() -> str:
    """The README's command that installs the wheel `make wheel` built, as a user pastes it."""
    install = (ROOT / "README.md").read_text().split("\n## Install\n", 1)[1]
    block = install.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #")[0].strip() for line in block.splitlines()]
    assert lines[0] == "make wheel", "the README's install starts by building the wheel"
    return next(line for line in lines if line.startswith("pip install") and "dist/" in line)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A venv with the wheel installed by the README's own command, and a PATH of that venv, git and a shell only."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    # Where `make wheel` leaves it; the tree is built (make setup), so the build hook skips npm and packs what is there.
    assert "--wheel-dir dist ." in (ROOT / "Makefile").read_text()
    run(sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--quiet", "-w", dist, timeout=900)
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", venv, timeout=300)
    tools = tmp / "tools"
    tools.mkdir()
    for program in ("git", "bash", "ls"):
        (tools / program).symlink_to(shutil.which(program))
    env = {k: v for k, v in os.environ.items() if k not in ("AUTORESEARCH_NODE", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{tools}"
    env["HOME"] = str(tmp / "home")
    assert shutil.which("node", path=env["PATH"]) is None, "the PATH under test must have no Node.js"
    # In the folder that holds dist/, as in a clone after `make wheel`; the venv's pip first on the PATH.
    run("bash", "-c", readme_install_line(), cwd=tmp, env=env, timeout=1200)
    return venv, env, tmp


def test_init_and_one_experiment_with_the_node_extra(installed):
    venv, env, tmp = installed
    cli = venv / "bin" / "autoresearch"
    ws = tmp / "ws"
    out = run(cli, "init", ws, "--budget", "1", env=env, timeout=120)
    # The pin the template's requirements.txt declares, which the workspace carries too.
    pin = next(
        line
        for line in (ROOT / "templates/tiny-cpu/requirements.txt").read_text().splitlines()
        if line.startswith("torch==")
    )
    assert f"its Python needs: {pin} and numpy" in out
    assert (ws / "requirements.txt").read_text() == (ROOT / "templates/tiny-cpu/requirements.txt").read_text()
    (ws / "train.py").write_text(TRAIN)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "stand-in", cwd=ws, env=env)
    run(cli, "run", ws, "--tag", "w1", "--max-experiments", "1", "--proposer", "offline", env=env, timeout=300)
    records = [json.loads(line) for line in (ws / ".autoresearch" / "w1" / "journal.jsonl").read_text().splitlines()]
    exps = [r for r in records if r["type"] == "experiment"]
    assert [e["status"] for e in exps][:1] == ["keep"] and len(exps) == 2
    assert exps[0]["metric"] == pytest.approx(1.003)


def test_the_server_extension_finds_the_extras_node(installed):
    venv, env, tmp = installed
    port, token = free_port(), "wheel-test-token"
    root = tmp / "root"
    root.mkdir(exist_ok=True)
    server = subprocess.Popen(
        [
            str(venv / "bin" / "jupyter"),
            "server",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--port-retries=0",
            f"--ServerApp.root_dir={root}",
            f"--IdentityProvider.token={token}",
            *(["--allow-root"] if os.getuid() == 0 else []),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/autoresearch/status"
        request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    status = json.loads(response.read())
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()
                assert time.monotonic() < deadline, "the server did not answer within 90 s"
                time.sleep(0.5)
        assert status["node"]["ok"] is True, status
        assert status["node"]["path"].startswith(str(venv)), status["node"]
        assert status["engine"]["exists"] is True
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_wheel_carries_package_json_metadata(installed):
    """Description, keywords, license and author are written once, in package.json, and reach the wheel."""
    venv, env, _ = installed
    got = json.loads(
        run(
            venv / "bin" / "python",
            "-c",
            "import importlib.metadata as m, json; d = m.metadata('jupyterlab-autoresearch');"
            "print(json.dumps({k: d.get_all(k) for k in ('Summary', 'Keywords', 'License-Expression', 'Author')}))",
            env=env,
        )
    )
    package = json.loads((ROOT / "package.json").read_text())
    assert package["private"] is True, "the npm package is never published: users install the wheel"
    assert got["Summary"] == [package["description"]]
    assert sorted(got["Keywords"][0].split(",")) == sorted(package["keywords"])
    assert got["License-Expression"] == [package["license"]]
    assert got["Author"] == [package["author"]["name"]]
