"""Issue 25: without the sandbox a training run can write the workspace's .git, and the server's own
git commands (GET compare: read-tree, apply and write-tree in a scratch index, diff; the free tag's
for-each-ref) ran the hooks, fsmonitor, filters and textconv it planted, inside the server. Each
test plants through a real run's train.py, calls the route, and checks the planted program never
ran (it would write a marker outside the workspace); a control with plain git shows it was live."""

import json
import subprocess
from pathlib import Path

import pytest

from conftest import GIT, STAND_IN, make_workspace
from jupyterlab_autoresearch.node import engine_path


def planting_train(marker: Path, evil: Path, files: dict[str, str], config: str) -> str:
    program = f'#!/bin/sh\necho "ran $0" >> {marker}\nexec cat 2>/dev/null\n'
    plant = f"""\
import os
if not os.path.exists(".git/planted"):
    for p, t in {json.dumps({str(evil): "$EVIL", **files})}.items():
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
        open(p, "w").write({json.dumps(program)} if t == "$EVIL" else t)
        os.chmod(p, 0o755)
    open(".git/config", "a").write({json.dumps(config)})
    open(".git/planted", "w").write("")
"""
    return plant + STAND_IN.format(sleep=0.1)


def planted_run(root: Path, tmp_path: Path, files: dict[str, str], config: str) -> tuple[Path, Path]:
    """A workspace (sandbox off) whose finished 3-experiment run planted `files` and `config`; the marker's path."""
    marker = tmp_path / "ran"
    ws = make_workspace(root / "ws")
    evil = ws / ".git" / "evil.sh"
    program = (ws / "program.md").read_text()
    (ws / "program.md").write_text(program.replace("---\n", "---\nsandbox: off\n", 1))
    (ws / "train.py").write_text(planting_train(marker, evil, files, config.replace("$EVIL", str(evil))))
    subprocess.run([*GIT, "commit", "-qam", "planting train.py"], cwd=ws, check=True)
    subprocess.run(
        ["node", str(engine_path()), "run", str(ws), "--tag", "t1", "--proposer", "offline", "--max-experiments", "3"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (ws / ".git" / "planted").exists()
    # Each discard's commit garbage-collected, so compare recomposes it in a scratch index.
    quiet = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
    subprocess.run([*quiet, "reflog", "expire", "--expire-unreachable=now", "--all"], cwd=ws, check=True)
    subprocess.run([*quiet, "gc", "-q", "--prune=now"], cwd=ws, check=True)
    return ws, marker


PLANTS = {
    "a post-index-change hook": ({".git/hooks/post-index-change": "$EVIL"}, ""),
    "core.fsmonitor": ({}, "[core]\n\tfsmonitor = $EVIL\n"),
    "a clean filter and a textconv named by .gitattributes": (
        {".gitattributes": "*.py filter=evil diff=evil\n"},
        '[filter "evil"]\n\tclean = $EVIL\n\tsmudge = $EVIL\n[diff "evil"]\n\ttextconv = $EVIL\n',
    ),
}


@pytest.mark.parametrize("attack", list(PLANTS))
async def test_what_a_run_planted_in_git_never_runs_in_the_servers_git_commands(
    attack, api, engine_bundle, jp_root_dir, tmp_path
):
    files, config = PLANTS[attack]
    ws, marker = planted_run(Path(jp_root_dir), tmp_path, files, config)
    records = [json.loads(line) for line in (ws / ".autoresearch" / "t1" / "journal.jsonl").read_text().splitlines()]
    exps = [r for r in records if r["type"] == "experiment"]
    assert len(exps) == 4
    assert any(e["status"] != "keep" for e in exps)  # one recomposed in a scratch index
    for n in range(1, 4):
        code, got = await api("compare", path="ws", tag="t1", a=0, b=n)
        assert code == 200, got
        assert got["diff"], got
    assert not marker.exists(), marker.read_text()
    # The control: plain git in the workspace obeys the plant.
    subprocess.run([*GIT, "read-tree", "HEAD"], cwd=ws, capture_output=True)
    subprocess.run([*GIT, "add", "--renormalize", "train.py"], cwd=ws, capture_output=True)
    subprocess.run([*GIT, "status"], cwd=ws, capture_output=True)
    assert marker.exists()
