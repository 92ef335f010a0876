"""The server's side of the rules of src/core it follows (read from engine/layout.json and
engine/rules.json) over the case table test/shared-rules.test.ts runs the engine's functions
over: a rule changed on one side only fails one of the two."""

import datetime
import json
import subprocess
from pathlib import Path

import pytest

from conftest import GIT, committed_workspace
from jupyterlab_autoresearch.read.workspaces import (
    RUN_BRANCH_PREFIX,
    default_tag,
    free_tag,
    journal_path,
    log_path,
    valid_tag,
)
from jupyterlab_autoresearch.routes.validate import ENV_NAME

CASES = json.loads((Path(__file__).parent.parent / "cases" / "shared-rules.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES["tags"], ids=lambda c: repr(c["tag"])[:24])
def test_a_tag_is_valid_exactly_as_the_engine_says(case):
    assert valid_tag(case["tag"]) is case["valid"]


@pytest.mark.parametrize("case", CASES["logs"], ids=lambda c: c["name"])
def test_a_run_log_is_named_as_the_engine_names_it(case, tmp_path):
    file = log_path(tmp_path, "t", case["n"], case["run"])
    assert file == tmp_path / ".autoresearch" / "t" / "logs" / case["name"]


@pytest.mark.parametrize("case", CASES["default_tags"], ids=lambda c: c["tag"])
def test_the_default_tag_is_the_engines(case):
    assert default_tag(datetime.datetime(case["year"], case["month"], case["day"], 23, 59)) == case["tag"]


@pytest.mark.parametrize("case", CASES["free_tags"], ids=lambda c: f"{c['journals']}-{c['branches']}")
def test_a_new_run_gets_the_tag_the_engine_would_give_it(case, tmp_path):
    today = default_tag()
    ws = committed_workspace(tmp_path, "print(1)\n")
    for taken in case["journals"]:
        journal = journal_path(ws, taken.replace("{today}", today))
        journal.parent.mkdir(parents=True)
        journal.write_text("")
    for taken in case["branches"]:
        subprocess.run([*GIT, "branch", f"{RUN_BRANCH_PREFIX}{taken.replace('{today}', today)}"], cwd=ws, check=True)
    assert free_tag(ws) == case["tag"].replace("{today}", today)


@pytest.mark.parametrize("case", CASES["branches"], ids=lambda c: c["tag"])
def test_the_branch_prefix_is_the_engines(case):
    assert RUN_BRANCH_PREFIX + case["tag"] == case["branch"]


@pytest.mark.parametrize("case", CASES["env_names"], ids=lambda c: repr(c["name"]))
def test_an_environment_variable_name_is_valid_exactly_as_the_engine_says(case):
    assert (ENV_NAME.fullmatch(case["name"]) is not None) is case["valid"]
