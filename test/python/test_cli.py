"""The `autoresearch` console script: runs the bundled engine with the host's Node.js."""

import os
import subprocess
import sys

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
    assert "Node.js >= 20 is required on this machine" in result.stderr
    assert "AUTORESEARCH_NODE" in result.stderr


def test_too_old_node_is_refused(fake_node):
    result = run_cli("--help", env={"AUTORESEARCH_NODE": fake_node("v18.20.1")})
    assert result.returncode == 127
    assert "too old" in result.stderr
