"""GET /autoresearch/status on a real jupyter server with the extension enabled."""

import json
import shutil
import subprocess

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

import jupyterlab_autoresearch
from jupyterlab_autoresearch.node import engine_path

REQUIRED = "Node.js >= 20.19 is required on the Jupyter server host"


async def test_status_reports_version_engine_and_node(jp_fetch, monkeypatch):
    monkeypatch.delenv("AUTORESEARCH_NODE", raising=False)
    response = await jp_fetch("autoresearch", "status")

    assert response.code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    status = json.loads(response.body)
    assert status["version"] == jupyterlab_autoresearch.__version__
    assert status["engine"] == {"path": str(engine_path()), "exists": engine_path().is_file()}

    node = shutil.which("node")
    assert node is not None, "the tests need Node.js >= 20.19 on the PATH"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert status["node"] == {
        "ok": True,
        "path": node,
        "version": version,
        "required": ">=20.19",
        "message": None,
    }


@pytest.mark.parametrize("case", ["missing", "too-old", "minor-too-old", "not-a-version"])
async def test_status_explains_an_unusable_node(jp_fetch, monkeypatch, fake_node, tmp_path, case):
    node = {
        "missing": str(tmp_path / "no-such-node"),
        "too-old": fake_node("v18.19.0"),
        # The minimum is 20.19 (package.json's engines), not any 20.
        "minor-too-old": fake_node("v20.18.3"),
        "not-a-version": fake_node("hello"),
    }[case]
    monkeypatch.setenv("AUTORESEARCH_NODE", node)

    response = await jp_fetch("autoresearch", "status")

    assert response.code == 200
    status = json.loads(response.body)["node"]
    assert status["ok"] is False
    assert status["message"].startswith(REQUIRED)
    assert "https://nodejs.org/" in status["message"]
    if case in ("too-old", "minor-too-old"):
        assert status["version"] in ("v18.19.0", "v20.18.3")
        assert "too old" in status["message"]


async def test_status_refuses_a_request_without_credentials(jp_fetch, jp_http_port, jp_base_url):
    # jp_fetch always adds the token, so send the request ourselves: no Authorization
    # header, no cookie, no token in the URL.
    url = f"http://localhost:{jp_http_port}{jp_base_url}autoresearch/status"
    with pytest.raises(HTTPClientError) as refused:
        await AsyncHTTPClient().fetch(url, follow_redirects=False)

    # jupyter_server's APIHandler answers @authenticated failures with 403, not a login redirect.
    assert refused.value.code == 403
    body = refused.value.response.body.decode()
    assert "engine" not in body and jupyterlab_autoresearch.__version__ not in body

    # The same request with the token succeeds, so the refusal was about credentials.
    assert (await jp_fetch("autoresearch", "status")).code == 200


async def test_status_says_git_is_missing_and_how_to_install_it(jp_fetch, monkeypatch, tmp_path):
    found = json.loads((await jp_fetch("autoresearch", "status")).body)["git"]
    assert found["ok"] is True and found["path"] == shutil.which("git") and found["version"][0].isdigit()
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    status = json.loads((await jp_fetch("autoresearch", "status")).body)["git"]
    assert status["ok"] is False and status["path"] is None
    assert status["message"].startswith("git is required on the Jupyter server host")
    assert "sudo apt-get install git" in status["message"]


def test_the_server_warns_at_start_without_git_or_node(tmp_path):
    """A real `jupyter server` whose PATH has neither: its log says so once, at start, with the fix."""
    import os
    import sys
    import time
    from pathlib import Path

    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": str(bin_dir), "AUTORESEARCH_NODE": ""}
    assert shutil.which("git", path=env["PATH"]) is None and shutil.which("node", path=env["PATH"]) is None
    server = subprocess.Popen(
        [
            str(bin_dir / "jupyter"),
            "server",
            "--no-browser",
            "--ip=127.0.0.1",
            "--port=0",
            f"--ServerApp.root_dir={tmp_path}",
            *(["--allow-root"] if os.getuid() == 0 else []),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = server.stderr.readline()
            if not line:
                break
            log.append(line)
            if "is running at" in line:  # the extensions have loaded and warned by now
                break
    finally:
        server.terminate()
        rest = server.communicate(timeout=30)[1]
    text = "".join(log) + rest
    assert "autoresearch: git is required on the Jupyter server host" in text, text[-3000:]
    assert "autoresearch: Node.js >= 20.19 is required on the Jupyter server host" in text


def test_a_programs_version_is_asked_once_per_binary(tmp_path):
    """`--version` runs once per binary (GET status and every engine command ask), again when the
    file is replaced, and a failure is not remembered."""
    import os
    import time

    from jupyterlab_autoresearch.supervise.tool_version import version_of

    calls = tmp_path / "calls"
    prog = tmp_path / "prog"

    def write(version: str, code: int = 0) -> None:
        prog.write_text(f'#!/bin/sh\necho x >> "{calls}"\necho {version}\nexit {code}\n')
        prog.chmod(0o755)
        later = time.time_ns() + 1_000_000_000 * len(calls.read_text().splitlines() if calls.exists() else [])
        os.utime(prog, ns=(later, later))

    write("v1", code=1)
    for _ in range(2):
        with pytest.raises(subprocess.CalledProcessError):
            version_of(str(prog))
    assert len(calls.read_text().splitlines()) == 2, "a failure was remembered"
    write("v22.1.0")
    assert [version_of(str(prog)) for _ in range(3)] == ["v22.1.0"] * 3
    assert len(calls.read_text().splitlines()) == 3
    write("v23.0.0-longer")
    assert version_of(str(prog)) == "v23.0.0-longer"
    assert len(calls.read_text().splitlines()) == 4
