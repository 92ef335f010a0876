"""The REST and WebSocket routes on a real jupyter server, with the real engine, git and workspaces."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import GIT, alive, git_status, journal, make_workspace, wait_for, write_long_run
from jupyterlab_autoresearch.read.workspaces import default_tag, engine_log_path

BAD_RUN_BODIES = [
    ({}, "path"),
    ({"path": 7}, "path"),
    ({"path": "../outside"}, "path"),
    ({"path": "no-such-folder"}, "path"),
    ({"path": "ws", "budget_s": -1}, "budget_s"),
    ({"path": "ws", "budget_s": "60"}, "budget_s"),
    ({"path": "ws", "budget_s": True}, "budget_s"),
    ({"path": "ws", "timeout_s": 0}, "timeout_s"),
    # Past what a timer can wait (2^31 ms): a longer Node timer would fire at once.
    ({"path": "ws", "timeout_s": 3000000}, "timeout_s"),
    ({"path": "ws", "budget_s": 2147484}, "budget_s"),
    ({"path": "ws", "sandbox": "maybe"}, "sandbox"),
    ({"path": "ws", "max_experiments": 1.5}, "max_experiments"),
    ({"path": "ws", "max_experiments": -1}, "max_experiments"),
    ({"path": "ws", "hours": "2"}, "hours"),
    ({"path": "ws", "max_dollars": 0}, "max_dollars"),
    ({"path": "ws", "proposer": "gpt"}, "proposer"),
    ({"path": "ws", "model": ""}, "model"),
    ({"path": "ws", "tag": "a b"}, "tag"),
    ({"path": "ws", "tag": "x;rm -rf"}, "tag"),
    ({"path": "ws", "resume": "yes"}, "resume"),
    ({"path": "ws", "pipeline": 1}, "pipeline"),
    ({"path": "ws", "kernel": "no-such-kernel"}, "kernel"),
    ({"path": "ws", "workers": 0}, "workers"),
    ({"path": "ws", "workers": 1.5}, "workers"),
    ({"path": "ws", "budget": 60}, "budget"),
    ({"path": "ws", "noise_runs": 0}, "noise_runs"),
    ({"path": "ws", "noise_runs": 1.5}, "noise_runs"),
    ({"path": "ws", "keep_sigma": -0.5}, "keep_sigma"),
    ({"path": "ws", "keep_sigma": "2"}, "keep_sigma"),
    ({"path": "ws", "confirm_runs": -1}, "confirm_runs"),
    ({"path": "ws", "confirm_runs": True}, "confirm_runs"),
    # The server passes its own address; a client may not name another.
    ({"path": "ws", "server_url": "http://elsewhere/"}, "server_url"),
    ({"path": "ws", "executor": "cloud"}, "executor"),
    # Slurm jobs and the server's python run without a kernel; the kernel executor needs one named.
    ({"path": "ws", "executor": "slurm", "kernel": "python3"}, "executor"),
    ({"path": "ws", "executor": "slurm", "kernel_id": "0f6c1a2b"}, "executor"),
    ({"path": "ws", "executor": "subprocess", "kernel": "python3"}, "executor"),
    ({"path": "ws", "executor": "kernel"}, "executor"),
]


@pytest.mark.parametrize("body,field", BAD_RUN_BODIES)
async def test_a_bad_run_body_is_refused_naming_the_field(body, field, workspace, supervisor, api):
    code, reply = await api("runs", "POST", body)
    assert code == 400, reply
    assert reply["field"] == field
    assert field in reply["message"]
    assert not supervisor.children and not (workspace / ".autoresearch").exists()


@pytest.mark.parametrize(
    "route,body,field",
    [
        ("runs", "not json", None),
        ("runs", [1, 2], None),
        ("runs/resume", {"path": "ws", "resume": True}, "resume"),
        ("runs/stop", {}, "path"),
        ("runs/stop", {"path": "ws", "force": True}, "force"),
        ("workspaces", {"path": "new", "template": "huge-gpu"}, "template"),
        ("workspaces", {"path": "new", "budget_s": 0.5}, "budget_s"),
        ("workspaces", {"path": ""}, "path"),
        ("workspaces", {"path": "/../../etc"}, "path"),
        ("workspaces", {"path": "new", "from": "--upload-pack=touch /tmp/x"}, "from"),
        ("workspaces", {"path": "new", "from": "/x", "template": "tiny-cpu"}, "from"),
        ("workspaces", {"path": "new", "ref": "main"}, "ref"),
        ("workspaces", {"path": "new", "from": "/no/such/repository"}, "from"),
        ("export", {}, "path"),
        ("export", {"path": "ws", "tag": "a/b"}, "tag"),
        ("export", {"path": "ws", "out": "/tmp/x.ipynb"}, "out"),
    ],
)
async def test_other_bad_bodies_are_refused(route, body, field, jp_root_dir, workspace, supervisor, api):
    code, reply = await api(route, "POST", body)
    assert code == 400, reply
    assert reply["field"] == field
    assert not (Path(jp_root_dir) / "new").exists()


@pytest.mark.parametrize(
    "route,params,field,status",
    [
        ("runs", {}, "path", 400),
        ("runs", {"path": "nowhere"}, "path", 404),
        ("experiments", {"path": "ws", "limit": "lots"}, "limit", 400),
        ("experiments", {"path": "ws", "offset": "-1"}, "offset", 400),
        ("experiments", {"path": "ws", "tag": "none"}, "tag", 404),
        ("runs/status", {"path": "ws", "tag": "../x"}, "tag", 400),
        ("log", {"path": "ws"}, None, 404),  # no runs yet
    ],
)
async def test_bad_queries_are_refused(route, params, field, status, workspace, supervisor, api):
    code, reply = await api(route, **params)
    assert code == status, reply
    assert reply["field"] == field


async def test_create_a_workspace_then_find_it(jp_root_dir, engine_bundle, supervisor, api):
    code, made = await api("workspaces", "POST", {"path": "projects/first", "budget_s": 5})
    assert code == 201, made
    assert made["path"] == "projects/first"
    folder = Path(jp_root_dir) / "projects" / "first"
    assert "budget_s: 5" in (folder / "program.md").read_text()
    assert git_status(folder) == ""

    code, again = await api("workspaces", "POST", {"path": "projects/first"})
    assert code == 400
    assert "exists and is not empty" in again["message"] and again["field"] == "path"

    code, listed = await api("workspaces")
    assert code == 200
    assert {"path": "projects/first", "name": "first", "program": True, "runs": [], "engine": None} in listed[
        "workspaces"
    ]


async def test_create_a_workspace_from_a_repository(jp_root_dir, engine_bundle, supervisor, api, tmp_path):
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / "program.md").write_text("# autoresearch\n\nLower val_bpb.\n")
    (origin / "prepare.py").write_text("TIME_BUDGET = 300\n")
    (origin / "train.py").write_text('print("---")\nprint("val_bpb: 1.0")\n')
    subprocess.run(["git", "init", "-q", "-b", "master"], cwd=origin, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=origin, check=True)
    subprocess.run([*GIT, "commit", "-qm", "first"], cwd=origin, check=True)
    code, made = await api("workspaces", "POST", {"path": "cloned", "from": str(origin)})
    assert code == 201, made
    assert "branch master" in made["message"] and "python prepare.py" in made["message"]
    folder = Path(jp_root_dir) / "cloned"
    assert (folder / ".gitignore").read_text() == "results.tsv\n.autoresearch/\n"
    assert git_status(folder) == ""
    code, listed = await api("workspaces")
    assert any(w["path"] == "cloned" and w["program"] for w in listed["workspaces"])


async def test_without_node_a_start_says_what_to_install(workspace, supervisor, api, monkeypatch, tmp_path):
    monkeypatch.setenv("AUTORESEARCH_NODE", str(tmp_path / "no-node"))
    code, reply = await api("runs", "POST", {"path": "ws", "proposer": "offline"})
    assert code == 503
    assert reply["message"].startswith("Node.js >= 20.19 is required on the Jupyter server host")
    assert not (workspace / ".autoresearch").exists()


async def test_an_engine_refusal_is_relayed_in_one_line(workspace, supervisor, api):
    (workspace / "train.py").write_text("print('uncommitted')\n")
    code, reply = await api("runs", "POST", {"path": "ws", "proposer": "offline", "tag": "dirty"})
    assert code == 400, reply
    assert "uncommitted changes" in reply["message"] and "\n" not in reply["message"]
    assert not supervisor.children


async def test_a_refusal_after_the_start_wait_shows_in_the_runs(workspace, supervisor, api):
    (workspace / "train.py").write_text("print('uncommitted')\n")
    supervisor.start_wait_s = 0  # as if the engine were slow to get to its checks
    code, started = await api("runs", "POST", {"path": "ws", "proposer": "offline", "tag": "late"})
    assert code == 202, started

    async def failure():
        code, runs = await api("runs", path="ws")
        return runs["last_failure"]

    failed = await wait_for(failure, timeout=30, what="the failure in GET /runs")
    assert failed["tag"] == "late" and failed["exit_code"] == 1
    assert "uncommitted changes" in failed["message"]


async def test_the_noise_options_reach_the_engine_as_flags(workspace, supervisor, api):
    body = {
        "path": "ws",
        "proposer": "offline",
        "tag": "noisy",
        "max_experiments": 0,
        "noise_runs": 1,
        "keep_sigma": 0.5,
        "confirm_runs": 0,
    }
    code, started = await api("runs", "POST", body)
    assert code == 202, started
    await wait_for(lambda: not alive(started["pid"]), timeout=60, what="the engine to finish")
    (run_start,) = [r for r in journal(workspace, "noisy") if r["type"] == "run_start"]
    assert run_start["config"]["noise_runs"] == 1
    assert run_start["config"]["keep_sigma"] == 0.5
    assert run_start["config"]["confirm_runs"] == 0
    argv = engine_log_path(workspace, "noisy").read_text().splitlines()[0]
    assert "--noise-runs 1 --keep-sigma 0.5 --confirm-runs 0" in argv


async def test_a_slurm_run_from_the_panel_is_executor_slurm_with_no_kernel(workspace, supervisor, api):
    """The picker's Slurm entry sends executor slurm: the engine gets --executor slurm and no kernel
    (no --kernel, no --server-url: the server resolves none); with a kernel too, a 400 that says why."""
    code, refused = await api("runs", "POST", {"path": "ws", "executor": "slurm", "kernel": "python3"})
    assert code == 400 and refused["field"] == "executor", refused
    assert refused["message"] == (
        "executor slurm runs without a kernel, but kernel names one: send executor slurm alone "
        "(the picker's Slurm cluster entry), or kernel alone"
    )
    assert not supervisor.children and not (workspace / ".autoresearch").exists()

    # The local cluster (scripts/local-slurm.sh start; make test starts it and exports SLURM_CONF).
    assert os.environ.get("SLURM_CONF"), (
        "no Slurm cluster: run scripts/local-slurm.sh start and eval its env (make test does)"
    )
    body = {"path": "ws", "proposer": "offline", "tag": "onslurm", "executor": "slurm", "max_experiments": 0}
    code, started = await api("runs", "POST", body)
    argv = engine_log_path(workspace, "onslurm").read_text().splitlines()[0]
    assert "--executor slurm" in argv, argv
    assert "--kernel" not in argv and "--server-url" not in argv, argv
    assert code == 202, started
    await wait_for(lambda: not alive(started["pid"]), timeout=120, what="the engine to finish")
    runs = [r for r in journal(workspace, "onslurm") if r["type"] == "run"]
    # The baseline's runs, each a Slurm job.
    assert runs and all(r["job"]["scheduler"] == "slurm" for r in runs), runs


async def test_a_slurm_run_with_no_cluster_to_reach_is_a_400_that_names_the_fix(
    workspace, supervisor, api, monkeypatch
):
    """An engine that cannot reach Slurm (no controller at SLURM_CONF) refuses in one line, relayed as a 400."""
    monkeypatch.setenv("SLURM_CONF", str(workspace / "no-such-slurm.conf"))
    body = {"path": "ws", "proposer": "offline", "tag": "noslurm", "executor": "slurm", "max_experiments": 0}
    code, refused = await api("runs", "POST", body)
    assert code == 400, refused
    assert refused["message"].startswith(f"SLURM_CONF names {workspace / 'no-such-slurm.conf'}, which is not a file;")
    assert "scripts/local-slurm.sh start" in refused["message"], refused


async def test_runs_say_the_tag_a_new_run_gets_and_the_engine_gives_it(workspace, supervisor, api):
    """One rule (src/core/journal/layout.ts freeTag): GET runs' next_tag is what a Start without a tag
    names the run, past a journal and a branch that already hold today's tags."""
    today = default_tag()
    _, runs = await api("runs", path="ws")
    assert runs["next_tag"] == today
    (workspace / ".autoresearch" / today).mkdir(parents=True)
    (workspace / ".autoresearch" / today / "journal.jsonl").write_text("")
    subprocess.run([*GIT, "branch", f"autoresearch/{today}-2"], cwd=workspace, check=True)
    _, runs = await api("runs", path="ws")
    assert runs["next_tag"] == f"{today}-3"
    code, started = await api("runs", "POST", {"path": "ws", "proposer": "offline", "max_experiments": 0})
    assert code == 202, started
    assert started["tag"] == f"{today}-3"
    await wait_for(lambda: not alive(started["pid"]), timeout=60, what="the engine to finish")
    assert [r["type"] for r in journal(workspace, f"{today}-3")][0] == "run_start"


def records_in(messages: list[dict]) -> list[dict]:
    """The journal records carried by the stream's `records` messages, in order (a light replay's
    rows read as src/core/journal/light-record.ts recordsFromRows reads them)."""
    return [r for m in messages if m["type"] == "records" for r in (m["records"] if "records" in m else from_rows(m))]


def from_rows(message: dict) -> list[dict]:
    shapes = message["shapes"]
    return [
        {"type": shapes[row[0]][0], **dict(zip(shapes[row[0]][1:], row[1:], strict=True))} for row in message["rows"]
    ]


async def test_start_experiments_stream_conflict_and_stop(workspace, supervisor, api, jp_ws_fetch):
    os.environ["ANTHROPIC_API_KEY"] = "sk-test-never-echoed-0123456789"
    try:
        code, started = await api("runs", "POST", {"path": "ws", "proposer": "offline", "tag": "t1", "pipeline": False})
    finally:
        del os.environ["ANTHROPIC_API_KEY"]
    assert code == 202, started
    assert started["tag"] == "t1" and alive(started["pid"])
    assert "sk-test" not in json.dumps(started)

    socket = await jp_ws_fetch("autoresearch", "events", params={"path": "ws", "tag": "t1"})
    messages = []

    async def experiments_over_socket():
        while True:
            raw = await socket.read_message()
            messages.append(json.loads(raw))
            if sum(1 for r in records_in(messages) if r["type"] == "experiment") >= 3:
                return True

    await wait_for(experiments_over_socket, timeout=60, what="3 experiments over the WebSocket")
    kinds = [r["type"] for r in records_in(messages)]
    # Every record exactly once, in journal order: each message starts where the last one ended.
    starts = [m["start"] for m in messages if m["type"] == "records"]
    sizes = [len(m["records"]) for m in messages if m["type"] == "records"]
    assert starts == [sum(sizes[:i]) for i in range(len(sizes))]
    assert kinds[:2] == ["run_start", "experiment_start"]
    assert any(
        m["type"] == "state" and m["state"] == "running" and m["pid"] == started["pid"] and m["engine_tag"] == "t1"
        for m in messages
    )
    # The engine's state.json as it writes it, each one matching the records sent before it.
    run_states = [(i, m["run_state"]) for i, m in enumerate(messages) if m["type"] == "run_state"]
    assert run_states and all(s["status"] == "running" and s["tag"] == "t1" for _, s in run_states)
    for i, s in run_states:
        assert s["records"] == sum(len(m["records"]) for m in messages[:i] if m["type"] == "records")

    code, page = await api("experiments", path="ws", tag="t1", limit=2)
    assert code == 200 and page["total"] >= 3 and len(page["experiments"]) == 2
    assert [e["n"] for e in page["experiments"]] == [0, 1]
    assert page["experiments"][0]["description"] == "baseline"

    code, again = await api("runs", "POST", {"path": "ws", "proposer": "offline"})
    assert code == 409 and "already running" in again["message"]

    code, status = await api("runs/status", path="ws")
    assert code == 200 and status["state"] == "running" and status["tag"] == "t1" and status["pid"] == started["pid"]

    # The baseline's runs went through the run guard, in the sandbox (bubblewrap is installed here).
    await wait_for(lambda: any(r["type"] == "run" for r in journal(workspace, "t1")), timeout=60, what="a first run")
    code, status = await api("runs/status", path="ws")
    assert code == 200 and status["sandbox"] == "on"

    code, stopping = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 202 and stopping["pid"] == started["pid"]
    await wait_for(lambda: not alive(started["pid"]), timeout=30, what="the engine to exit")
    end = journal(workspace, "t1")[-1]
    assert end["type"] == "run_end" and end["reason"] in ("stop", "signal")
    assert git_status(workspace) == ""

    async def stopped_on_socket():
        message = json.loads(await socket.read_message())
        return message["type"] == "state" and message["state"] == "stopped"

    await wait_for(stopped_on_socket, timeout=20, what="the stopped state over the WebSocket")
    socket.close()

    code, runs = await api("runs", path="ws")
    assert code == 200 and runs["engine"] is None
    (run,) = runs["runs"]
    assert run["state"] == "stopped" and run["end"]["reason"] == end["reason"]
    assert run["experiments"] >= 3 and run["best"]["metric"] <= run["baseline"]
    code, again = await api("runs/stop", "POST", {"path": "ws"})
    assert code == 404

    code, exported = await api("export", "POST", {"path": "ws"})
    assert code == 201, exported
    assert exported["tag"] == "t1" and exported["notebook"] == "ws/t1.ipynb"
    notebook = json.loads((workspace / "t1.ipynb").read_text())
    assert notebook["cells"][0]["cell_type"] == "markdown"
    code, missing = await api("export", "POST", {"path": "ws", "tag": "nope"})
    assert code == 404 and missing["field"] == "tag"


async def test_the_stream_sends_the_live_log_of_the_running_experiment(
    jp_root_dir, engine_bundle, supervisor, api, jp_ws_fetch
):
    make_workspace(Path(jp_root_dir) / "slow", sleep=1.5)
    code, started = await api("runs", "POST", {"path": "slow", "proposer": "offline", "tag": "live"})
    assert code == 202, started
    socket = await jp_ws_fetch("autoresearch", "events", params={"path": "slow", "tag": "live"})

    async def log_line():
        message = json.loads(await socket.read_message())
        return message if message["type"] == "log" and "step 1 | loss 3.2500" in message["lines"] else None

    log = await wait_for(log_line, timeout=30, what="a log line over the WebSocket")
    assert log["path"] == f"slow/.autoresearch/live/logs/{log['n']:04d}.log"
    code, status = await api("runs/status", path="slow")
    assert status["in_flight"] is None or status["in_flight"]["log"].startswith("slow/.autoresearch/live/logs/")
    socket.close()

    code, tail = await api("log", path="slow", tag="live", n=0)
    assert code == 200 and "step 1 | loss 3.2500" in tail["text"]


async def test_a_corrupt_journal_line_is_a_409_naming_the_line(workspace, supervisor, api):
    run = workspace / ".autoresearch" / "bad"
    run.mkdir(parents=True)
    good = {
        "type": "run_end",
        "ts": "2026-01-01T00:00:00Z",
        "reason": "stop",
        "message": None,
        "best_commit": None,
        "best_metric": None,
    }
    (run / "journal.jsonl").write_text(json.dumps(good) + "\n{oops\n" + json.dumps(good) + "\n")
    code, reply = await api("experiments", path="ws", tag="bad")
    assert code == 409 and "line 2" in reply["message"]

    # A torn last line (no newline: a write cut short) is dropped, as the engine drops it.
    (run / "journal.jsonl").write_text(json.dumps(good) + "\n" + '{"type": "run_')
    code, reply = await api("experiments", path="ws", tag="bad")
    assert code == 200 and reply["total"] == 0
    code, status = await api("runs/status", path="ws", tag="bad")
    assert status["state"] == "stopped" and status["records"] == 1


async def test_the_stream_replays_in_bounded_batches_from_since(workspace, supervisor, jp_ws_fetch):
    run = workspace / ".autoresearch" / "long"
    run.mkdir(parents=True)
    ends = [
        {
            "type": "run_end",
            "ts": "2026-01-01T00:00:00Z",
            "reason": "stop",
            "message": str(i),
            "best_commit": None,
            "best_metric": None,
        }
        for i in range(1200)
    ]
    (run / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ends))

    async def replay(since: int) -> list[dict]:
        socket = await jp_ws_fetch("autoresearch", "events", params={"path": "ws", "tag": "long", "since": str(since)})
        got: list[dict] = []
        while sum(len(m["records"]) for m in got) < 1200 - since:
            message = json.loads(await socket.read_message())
            if message["type"] == "records":
                got.append(message)
        socket.close()
        return got

    everything = await replay(0)
    assert [(m["start"], len(m["records"])) for m in everything] == [(0, 500), (500, 500), (1000, 200)]
    assert [r["message"] for r in records_in(everything)] == [str(i) for i in range(1200)]
    rest = await replay(1100)
    assert [(m["start"], len(m["records"])) for m in rest] == [(1100, 100)]
    assert records_in(rest)[0]["message"] == "1100"


async def test_subscribers_replay_the_journal_read_once_and_follow_it_from_there(
    workspace, supervisor, jp_ws_fetch, monkeypatch
):
    """A long run's journal is read and validated once (read_journal's cache), not once per
    subscriber; what is appended later is still validated, counted and named by its line."""
    import jupyterlab_autoresearch.read.journal as journal_module

    parsed: list[bytes] = []
    real_parse = journal_module.parse

    def counting_parse(raw: bytes) -> dict:
        parsed.append(raw)
        return real_parse(raw)

    monkeypatch.setattr(journal_module, "parse", counting_parse)
    run = workspace / ".autoresearch" / "once"
    run.mkdir(parents=True)

    def end(i: int) -> str:
        record = {"type": "run_end", "ts": "2026-01-01T00:00:00Z", "reason": "stop", "message": str(i)}
        return json.dumps({**record, "best_commit": None, "best_metric": None}) + "\n"

    file = run / "journal.jsonl"
    file.write_text("".join(end(i) for i in range(1200)))

    async def read_until(socket, test) -> list[dict]:
        got: list[dict] = []
        while not test(got):
            got.append(json.loads(await socket.read_message()))
        return got

    def replayed(n: int):
        return lambda got: len(records_in(got)) >= n

    for _ in range(2):
        socket = await jp_ws_fetch("autoresearch", "events", params={"path": "ws", "tag": "once"})
        got = await read_until(socket, replayed(1200))
        assert [r["message"] for r in records_in(got)] == [str(i) for i in range(1200)]
        socket.close()
    assert len(parsed) == 1200, "the second subscriber's replay read the journal again"

    socket = await jp_ws_fetch("autoresearch", "events", params={"path": "ws", "tag": "once"})
    await read_until(socket, replayed(1200))
    with file.open("a") as f:
        f.write(end(1200) + '{"type": "run_end", "ts": 5}\n')
    got = await read_until(socket, lambda got: any(m["type"] == "error" for m in got))
    news = [m for m in got if m["type"] == "records"]
    assert [(m["start"], [r["message"] for r in m["records"]]) for m in news] == [(1200, ["1200"])]
    error = next(m["message"] for m in got if m["type"] == "error")
    assert "line 1202" in error, error
    socket.close()


async def test_a_light_replay_leaves_out_what_only_an_output_shows_and_the_route_gives_it_whole(
    workspace, supervisor, api, jp_ws_fetch
):
    """light=1: the replay's experiments with what the panel lists and charts only (no diff, summary,
    usage…), and their starts as their numbers; GET experiments?n= gives those experiments whole."""
    from test_noise_journal import noisy_records, write_journal

    from jupyterlab_autoresearch.read.follower import LIGHT

    records = noisy_records()
    write_journal(workspace, records)
    socket = await jp_ws_fetch("autoresearch", "events", params={"path": "ws", "tag": "t", "light": "1"})
    got: list[dict] = []
    while len(records_in(got)) < len(records):
        got.append(json.loads(await socket.read_message()))
    sent = records_in(got)
    assert [r["type"] for r in sent] == [r["type"] for r in records], "every record is counted, light or not"
    for whole, light in zip(records, sent, strict=True):
        if whole["type"] == "experiment":
            assert light == {**{k: v for k, v in whole.items() if k in LIGHT}, "light": True}
            assert "diff" in whole and "diff" not in light and "summary" not in light
            assert light["verdict"] == whole["verdict"] and light["runs"] == whole["runs"]
        elif whole["type"] == "experiment_start":
            assert light == {"type": "experiment_start", "n": whole["n"]}
        else:
            assert light == whole
    # What is appended later comes whole.
    later = {**records[-3], "n": 9, "ts": "2026-01-02T00:00:00Z"}
    with (workspace / ".autoresearch" / "t" / "journal.jsonl").open("a") as f:
        f.write(json.dumps(later) + "\n")
    while len(records_in(got)) <= len(records):
        got.append(json.loads(await socket.read_message()))
    assert records_in(got)[-1] == later
    socket.close()

    code, reply = await api("experiments", path="ws", tag="t", n="2,0,7")
    assert code == 200
    assert reply["experiments"] == [r for r in records if r["type"] == "experiment" and r["n"] in (0, 2)]
    for bad in ("", "1,,2", "-1", "x", ",".join(["1"] * 201)):
        code, reply = await api("experiments", path="ws", tag="t", n=bad)
        assert code == 400 and "n must be up to 200 whole numbers" in reply["message"], (bad, reply)


async def test_a_run_of_2000_experiments_exports_and_reads_whole(workspace, supervisor, api):
    """What the server has of the engine at a size past many pipe buffers: the export (a notebook
    over 1 MB, which the engine writes to a file) and the run's state (which `autoresearch state` writes)."""
    write_long_run(workspace, 2000)
    code, runs = await api("runs", path="ws")
    assert code == 200, runs
    (run,) = runs["runs"]
    assert run["experiments"] == 2000 and run["best"]["n"] == 1990
    code, exported = await api("export", "POST", {"path": "ws", "tag": "t1"})
    assert code == 201, exported
    assert exported["message"].endswith("(run t1, 2000 experiments)")
    text = (workspace / "t1.ipynb").read_text()
    assert len(text.encode()) > 1024 * 1024
    cells = json.loads(text)["cells"]
    assert [c["id"] for c in cells if c["id"].startswith("experiment-")] == [f"experiment-{n}" for n in range(2000)]
