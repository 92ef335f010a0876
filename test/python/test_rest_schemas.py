"""A real server's REST answers against the JSON Schemas the build writes from src/core/api/responses.ts
(engine/rest.schema.json), the declaration the lab's types are inferred from: a field the server
adds, drops, renames or retypes, or a state word it serves that src/core does not declare, fails here."""

from pathlib import Path

import fastjsonschema
import pytest

from conftest import alive, journal, wait_for, write_long_run
from rest_conformance import SCHEMAS, conforms


def test_the_schemas_refuse_what_they_should():
    """The check is not vacuous: an undeclared field, a null where none may be, an unknown state."""
    good = {"path": "ws", "message": "made"}
    conforms("workspace_created", good)
    for bad in ({**good, "extra": 1}, {"path": "ws"}, {**good, "message": None}):
        with pytest.raises(fastjsonschema.JsonSchemaValueException):
            fastjsonschema.compile(SCHEMAS["workspace_created"])(bad)
    corrupt = {"path": "ws", "engine": None, "last_failure": None, "next_tag": None}
    conforms("runs", {**corrupt, "runs": [{"tag": "t", "state": "corrupt", "error": "bad line 3"}]})
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        fastjsonschema.compile(SCHEMAS["runs"])({**corrupt, "runs": [{"tag": "t", "state": "broken", "error": "x"}]})


async def test_every_route_answers_as_src_core_declares(workspace, supervisor, api, jp_root_dir):
    code, status = await api("status")
    assert code == 200
    conforms("status", status)

    code, made = await api("workspaces", "POST", {"path": "projects/first", "budget_s": 5})
    assert code == 201, made
    conforms("workspace_created", made)
    code, listed = await api("workspaces")
    assert code == 200 and {w["path"] for w in listed["workspaces"]} >= {"ws", "projects/first"}
    conforms("workspaces", listed)

    code, started = await api("runs", "POST", {"path": "ws", "proposer": "offline", "tag": "t1", "pipeline": False})
    assert code == 202, started
    conforms("run_started", started)
    await wait_for(
        lambda: sum(r["type"] == "experiment" for r in journal(workspace, "t1")) >= 2,
        timeout=90,
        what="two experiments",
    )
    code, runs = await api("runs", path="ws")
    assert code == 200 and runs["runs"][0]["state"] == "running" and runs["engine"]["tag"] == "t1"
    conforms("runs", runs)
    code, one = await api("runs/status", path="ws", tag="t1")
    assert code == 200 and one["pid"] == started["pid"]
    conforms("run_status", one)
    code, page = await api("experiments", path="ws", tag="t1")
    assert code == 200 and page["experiments"][0]["description"] == "baseline"
    conforms("experiments", page)
    code, log = await api("log", path="ws", tag="t1", n=0)
    assert code == 200 and log["text"]
    conforms("log", log)

    code, stopping = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 202, stopping
    conforms("run_stopping", stopping)
    await wait_for(lambda: not alive(started["pid"]), timeout=30, what="the engine to exit")

    # Beside the stopped run, one whose engine went away without ending it, and one the server cannot read.
    write_long_run(workspace, 3, tag="gone")
    lines = (workspace / ".autoresearch" / "gone" / "journal.jsonl").read_text().splitlines()
    (workspace / ".autoresearch" / "gone" / "journal.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    bad = workspace / ".autoresearch" / "bad" / "journal.jsonl"
    bad.parent.mkdir()
    bad.write_text("not json\n")
    code, runs = await api("runs", path="ws")
    assert code == 200
    assert {r["tag"]: r["state"] for r in runs["runs"]} == {"t1": "stopped", "gone": "died", "bad": "corrupt"}
    conforms("runs", runs)

    code, exported = await api("export", "POST", {"path": "ws", "tag": "t1"})
    assert code == 201, exported
    conforms("export", exported)
    assert (Path(jp_root_dir) / exported["notebook"]).is_file()

    code, refused = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 404
    conforms("error", refused)
    code, refused = await api("runs", "POST", {"path": "ws", "budget_s": -1})
    assert code == 400 and refused["field"] == "budget_s"
    conforms("error", refused)
