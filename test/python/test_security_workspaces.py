"""POST /autoresearch/workspaces writes budget_s into program.md and prepare.py: it takes exactly the
budgets the engine then runs with (a whole number of seconds, above 0 and at most run-options.json's
max for budget_s), so a request cannot leave a workspace the engine refuses. Real server, real engine."""

import json
import subprocess
from pathlib import Path

import pytest

from conftest import GIT, STAND_IN, journal
from jupyterlab_autoresearch.node import engine_path
from jupyterlab_autoresearch.supervise.run_options import run_options


def budget_max() -> int:
    return next(o for o in run_options() if o["key"] == "budget_s")["max"]


@pytest.mark.parametrize(
    "raw",
    ["1e308", "1e999", "-1", "0", "0.5", "NaN", "Infinity", '"300"', "true", "[300]", "2147484"],
)
async def test_a_budget_the_engine_would_refuse_is_a_400_naming_budget_s_and_its_range(
    raw, jp_root_dir, engine_bundle, supervisor, api
):
    body = '{"path": "new", "budget_s": %s}' % raw
    code, reply = await api("workspaces", "POST", body)
    assert code == 400, reply
    assert reply["field"] == "budget_s"
    assert reply["message"].startswith(f"budget_s must be a whole number of seconds from 1 to {budget_max()}"), reply
    assert "\n" not in reply["message"]
    # Nothing written: no folder, so no program.md the engine would refuse.
    assert not (Path(jp_root_dir) / "new").exists()


async def test_the_largest_budget_makes_a_workspace_the_engine_runs(jp_root_dir, engine_bundle, supervisor, api):
    high = budget_max()
    code, made = await api("workspaces", "POST", {"path": "edge", "budget_s": high})
    assert code == 201, made
    ws = Path(jp_root_dir) / "edge"
    assert f"budget_s: {high}\n" in (ws / "program.md").read_text()
    # The template's train.py needs torch: a stand-in that finishes at once, as conftest's workspaces have.
    (ws / "train.py").write_text(STAND_IN.format(sleep=0.1))
    subprocess.run([*GIT, "commit", "-qam", "fast stand-in"], cwd=ws, check=True, timeout=60)
    done = subprocess.run(
        ["node", str(engine_path()), "run", str(ws), "--tag", "t", "--proposer", "offline", "--noise-runs", "1"]
        + ["--max-experiments", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    start = next(r for r in journal(ws, "t") if r["type"] == "run_start")
    assert start["config"]["budget_s"] == high


def test_the_engine_init_refuses_the_same_budgets(tmp_path, engine_bundle):
    for budget in ("1e308", "0", str(budget_max() + 1)):
        folder = tmp_path / f"ws-{budget}"
        done = subprocess.run(
            ["node", str(engine_path()), "init", str(folder), "--budget", budget],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, done.stdout
        # The same check, and the same words, as `autoresearch run --budget` (run-flags.ts's numberParser).
        assert f"'--budget <seconds>' argument '{budget}' is invalid" in done.stderr, done.stderr
        assert f"must be a whole number above 0, at most {budget_max()} " in done.stderr, done.stderr
        assert not folder.exists()


def test_the_rule_is_run_options_json(engine_bundle):
    """The server reads the bound where the engine's build wrote it; here it is what the engine declares."""
    declared = json.loads((engine_path().parent / "run-options.json").read_text())["options"]
    assert next(o for o in declared if o["key"] == "budget_s")["max"] == budget_max() == (2**31 - 1) // 1000
