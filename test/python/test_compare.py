"""GET compare: two experiments of a real run side by side — their records, and the diff of the
editable files between the code each ran: from their commits while git has them, recomposed from
the journal once a discarded one's commit is garbage-collected, null with a reason when neither
can be had; `b=best` is the run's best as state.json has it."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import GIT, STAND_IN, make_workspace
from jupyterlab_autoresearch.node import engine_path
from jupyterlab_autoresearch.read import compare as compare_mod
from rest_conformance import conforms

# The stand-in, crashing when the offline proposer deepens the model: with its fixed seed, six
# experiments give keeps, discards and a crash (#5, N_LAYER 4 → 8).
TRAIN = STAND_IN.format(sleep=0.1).replace('print("---")', 'assert N_LAYER < 8, "too deep"\nprint("---")')


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, engine_bundle):
    """A workspace with run t1 finished (7 experiments), made once and copied for each test."""
    ws = make_workspace(tmp_path_factory.mktemp("compare") / "ws", train=TRAIN)
    subprocess.run(
        ["node", str(engine_path()), "run", str(ws), "--tag", "t1", "--proposer", "offline", "--max-experiments", "6"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return ws


@pytest.fixture
def ws(finished_run, jp_root_dir):
    target = Path(jp_root_dir) / "ws"
    shutil.copytree(finished_run, target, symlinks=True)
    return target


def experiments(ws: Path, tag: str = "t1") -> dict[int, dict]:
    lines = (ws / ".autoresearch" / tag / "journal.jsonl").read_text().splitlines()
    return {r["n"]: r for r in map(json.loads, lines) if r["type"] == "experiment"}


def by_status(ws: Path, status: str) -> dict:
    return next(r for r in experiments(ws).values() if r["status"] == status and r["n"] > 0)


def git_diff(ws: Path, a: str, b: str) -> str:
    return subprocess.run(
        ["git", "diff", a, b, "--", "train.py"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout


def forget_unreachable(ws: Path) -> None:
    """What a month of reflog expiry and an automatic gc do to a discarded experiment's commit, now."""
    subprocess.run([*GIT, "reflog", "expire", "--expire-unreachable=now", "--all"], cwd=ws, check=True)
    subprocess.run([*GIT, "gc", "-q", "--prune=now"], cwd=ws, check=True)


def has_object(ws: Path, commit: str) -> bool:
    return (
        subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ws, capture_output=True).returncode == 0
    )


async def test_the_baseline_against_the_best(ws, api):
    state = json.loads((ws / ".autoresearch" / "t1" / "state.json").read_text())
    code, got = await api("compare", path="ws", tag="t1", a=0, b="best")
    assert code == 200, got
    conforms("compare", got)
    best = experiments(ws)[state["best"]["n"]]
    assert got["best"] == best["n"] == got["b"]["n"] and got["b"]["status"] == "keep"
    assert got["a"] == experiments(ws)[0]
    assert (got["metric"], got["direction"], got["editable"]) == ("val_bpb", "lower", ["train.py"])
    # The two commits' diff as git gives it, through the editable files only.
    assert got["diff"] == git_diff(ws, got["a"]["commit"], best["commit"]) != ""
    assert "-LEARNING_RATE = 0.001" in got["diff"] and got["truncated"] is False
    assert got["sources"] == {"a": "commit", "b": "commit"} and got["reason"] is None
    assert set(got["a"]["summary"]) >= {"val_bpb", "training_seconds", "peak_vram_mb"}


async def test_a_crash_still_has_its_commit_and_its_diff(ws, api):
    crash = by_status(ws, "crash")
    code, got = await api("compare", path="ws", tag="t1", a=crash["n"], b="best")
    assert code == 200, got
    assert got["a"]["status"] == "crash" and got["a"]["metric"] is None
    assert got["diff"] == git_diff(ws, crash["commit"], experiments(ws)[got["best"]]["commit"])
    assert "N_LAYER = 8" in got["diff"]


async def test_a_garbage_collected_discard_is_recomposed_from_the_journal(ws, api):
    discard = by_status(ws, "discard")
    code, before = await api("compare", path="ws", tag="t1", a=discard["n"], b="best")
    assert code == 200 and before["sources"]["a"] == "commit", before
    forget_unreachable(ws)
    assert not has_object(ws, discard["commit"])  # the reset left it unreachable: gone
    code, after = await api("compare", path="ws", tag="t1", a=discard["n"], b="best")
    assert code == 200, after
    assert after["sources"] == {"a": "journal", "b": "commit"}
    assert f"commit {discard['commit'][:7]} is no longer in the repository" in after["reason"]
    # Same blobs, so the same text, index line included.
    assert after["diff"] == before["diff"] != ""


async def test_without_commit_or_parent_the_diff_is_null_and_says_why(ws, api):
    # Run t2: t1's journal with one discard's commit and parent replaced by ones git never had.
    discard = by_status(ws, "discard")
    lines = []
    for line in (ws / ".autoresearch" / "t1" / "journal.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["type"] == "experiment" and r["n"] == discard["n"]:
            r = {**r, "commit": "e" * 40, "parent_commit": "f" * 40}
        lines.append(json.dumps(r))
    (ws / ".autoresearch" / "t2").mkdir()
    (ws / ".autoresearch" / "t2" / "journal.jsonl").write_text("\n".join(lines) + "\n")
    code, got = await api("compare", path="ws", tag="t2", a=0, b=discard["n"])
    assert code == 200, got
    assert got["diff"] is None and got["sources"]["b"] is None
    assert "parent commit fffffff is not in the repository either" in got["reason"]
    assert got["b"]["description"] == discard["description"]  # the records are still compared


async def test_a_diff_over_the_cap_is_cut_at_a_line_and_flagged(ws, api, monkeypatch):
    code, whole = await api("compare", path="ws", tag="t1", a=0, b="best")
    monkeypatch.setattr(compare_mod, "MAX_DIFF_BYTES", 100)
    code, cut = await api("compare", path="ws", tag="t1", a=0, b="best")
    assert code == 200 and cut["truncated"] is True, cut
    assert len(cut["diff"].encode()) <= 100 and cut["diff"].endswith("\n")
    assert whole["diff"].startswith(cut["diff"]) and len(whole["diff"]) > 100


async def test_without_git_the_records_come_with_the_reason(ws, api, monkeypatch):
    monkeypatch.setenv("PATH", str(ws / "nowhere"))
    code, got = await api("compare", path="ws", tag="t1", a=0, b=2)
    assert code == 200, got
    assert got["diff"] is None and got["reason"] == compare_mod.NO_GIT
    assert (got["a"]["n"], got["b"]["n"]) == (0, 2)


@pytest.mark.parametrize(
    "params,field,status",
    [
        ({"b": 1}, "a", 400),
        ({"a": 0}, "b", 400),
        ({"a": "one", "b": 1}, "a", 400),
        ({"a": "-1", "b": 1}, "a", 400),
        ({"a": 0, "b": "1.5"}, "b", 400),
        ({"a": 0, "b": "Best"}, "b", 400),
        ({"a": 0, "b": 99}, "b", 404),
        ({"a": 99, "b": "best"}, "a", 404),
        ({"a": 0, "b": 1, "tag": "nope"}, "tag", 404),
    ],
)
async def test_bad_experiment_numbers_are_refused_naming_the_field(ws, api, params, field, status):
    code, got = await api("compare", path="ws", **{"tag": "t1", **params})
    assert code == status, got
    assert got["field"] == field and len(got["message"]) < 300


async def test_best_before_any_keep_is_a_404_naming_b(ws, api):
    # A run with its baseline only in flight: the journal has no kept experiment yet.
    lines = (ws / ".autoresearch" / "t1" / "journal.jsonl").read_text().splitlines()
    head = [line for line in lines if json.loads(line)["type"] in ("run_start", "experiment_start")][:2]
    (ws / ".autoresearch" / "t3").mkdir()
    (ws / ".autoresearch" / "t3" / "journal.jsonl").write_text("\n".join(head) + "\n")
    code, got = await api("compare", path="ws", tag="t3", a=0, b="best")
    assert code == 404 and got["field"] == "b" and "no best yet" in got["message"], got
    code, got = await api("compare", path="ws", tag="t3", a=0, b=0)
    assert code == 404 and got["field"] == "a" and "has no result yet" in got["message"], got
