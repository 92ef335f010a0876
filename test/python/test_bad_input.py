"""Bad input, from a request or from the files on disk, is a 4xx (or a per-run report) with a clear
message, never a 500 or a traceback in the server's log. Real server, real files."""

import json

import pytest
from tornado.httpclient import HTTPClientError

END = {
    "type": "run_end",
    "ts": "2026-01-01T00:00:00Z",
    "reason": "stop",
    "message": None,
    "best_commit": None,
    "best_metric": None,
}
START = {
    "type": "experiment_start",
    "ts": "2026-01-01T00:00:00Z",
    "n": 1,
    "parent_commit": "abc1234",
    "description": "d",
}
EXPERIMENT = {
    "type": "experiment",
    "ts": "2026-01-01T00:00:00Z",
    "n": 0,
    "parent_commit": "abc1234",
    "commit": "abc1234",
    "description": "baseline",
    "rationale": "",
    "diff": "",
    "lines_added": 0,
    "lines_removed": 0,
    "summary": {},
    "metric": 1.0,
    "best_before": None,
    "delta": None,
    "status": "keep",
    "reason": None,
    "memory_gb": 0.0,
    "timings": {},
    "exit_code": 0,
    "signal": None,
    "log_path": None,
    "log_truncated": False,
    "proposer": "offline",
    "usage": {"input_tokens": 0, "output_tokens": 0},
    "cost_usd": 0.0,
}


def line(record: dict, **changes) -> str:
    """A journal line; a change given as a str is put into the JSON text as is (NaN, 1e300, …)."""
    text = json.dumps({**record, **{k: f"@{k}@" for k in changes}})
    for key, raw in changes.items():
        text = text.replace(f'"@{key}@"', raw)
    return text


BAD_LINES = {
    "n-1e300": line(START, n="1e300"),
    "n-nan": line(START, n="NaN"),
    "n-fraction": line(START, n="2.5"),
    "n-negative": line(START, n="-1"),
    "n-past-2^53": line(START, n="12345678901234567890"),
    "n-5000-digits": line(START, n="9" * 5000),
    "metric-1e999": line(END, best_metric="1e999"),
    "metric-infinity": line(EXPERIMENT, metric="Infinity"),
    "usage-text": line(EXPERIMENT, usage='{"input_tokens": "lots"}'),
    "garbage": "{oops",
    "nested": "[" * 100_000,
}


def strict_json(body: bytes):
    """JSON as a browser parses it: NaN and Infinity are not JSON."""

    def refuse(token):
        raise ValueError(f"{token} is not JSON")

    return json.loads(body, parse_constant=refuse)


def no_traceback(server_log: list[str]) -> None:
    assert not [ln for ln in server_log if "Traceback" in ln or ln.startswith(("ERROR", "CRITICAL"))], "\n".join(
        server_log
    )


@pytest.mark.parametrize("bad", list(BAD_LINES.values()), ids=list(BAD_LINES))
async def test_a_bad_journal_line_is_reported_for_its_run_only(
    bad, workspace, supervisor, jp_fetch, jp_ws_fetch, server_log
):
    for tag, text in (("good", json.dumps(END)), ("bad", f"{json.dumps(END)}\n{bad}\n{json.dumps(END)}")):
        (workspace / ".autoresearch" / tag).mkdir(parents=True)
        (workspace / ".autoresearch" / tag / "journal.jsonl").write_text(text + "\n")

    response = await jp_fetch("autoresearch", "runs", params={"path": "ws"}, raise_error=False)
    assert response.code == 200, response.body[:500]
    runs = {r["tag"]: r for r in strict_json(response.body)["runs"]}
    assert runs["good"]["state"] == "stopped"
    assert runs["bad"]["state"] == "corrupt"
    error = runs["bad"]["error"]
    assert "ws/.autoresearch/bad/journal.jsonl" in error and "line 2" in error, error
    assert "delete that line" in error and len(error) < 600, error

    # Asked for by name, the damaged run is a 409 naming the line, not a 500.
    for route in (("runs", "status"), ("experiments",)):
        response = await jp_fetch("autoresearch", *route, params={"path": "ws", "tag": "bad"}, raise_error=False)
        reply = strict_json(response.body)
        assert response.code == 409 and "line 2" in reply["message"], reply

    # The event stream sends the good record, then the error, and goes on answering.
    socket = await jp_ws_fetch("autoresearch", "events", params={"path": "ws", "tag": "bad"})
    got = []
    while not any(m["type"] == "error" for m in got):
        got.append(strict_json(await socket.read_message()))
    assert [len(m["records"]) for m in got if m["type"] == "records"] == [1]
    assert "line 2" in [m for m in got if m["type"] == "error"][0]["message"]
    socket.close()
    no_traceback(server_log)


WS_REFUSALS = [
    ({}, 400, "path is required"),
    ({"path": "../outside"}, 400, "outside the server's root"),
    ({"path": "nowhere"}, 404, "there is no folder"),
    ({"path": "ws", "tag": "unknown"}, 404, "no run tagged"),
    ({"path": "ws", "tag": "a b"}, 400, "tag may only use"),
    ({"path": "ws", "since": "²"}, 400, "since must be"),
    ({"path": "ws", "since": "-1"}, 400, "since must be"),
    ({"path": "ws", "since": "9" * 5000}, 400, "since must be"),
    ({"path": "x" * 5000}, 400, "path is longer than"),
]


@pytest.mark.parametrize("params,status,says", WS_REFUSALS, ids=[str(p)[:40] for p, _, _ in WS_REFUSALS])
async def test_the_event_stream_refuses_before_the_upgrade_with_a_4xx(
    params, status, says, workspace, supervisor, jp_ws_fetch, server_log
):
    (workspace / ".autoresearch" / "t").mkdir(parents=True)
    (workspace / ".autoresearch" / "t" / "journal.jsonl").write_text(json.dumps(END) + "\n")
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("autoresearch", "events", params=params)
    assert refused.value.code == status
    no_traceback(server_log)
    # One line in the log says why, so the client's retries do not fill it.
    mentions = [ln for ln in server_log if ln.startswith("WARNING") and says in ln]
    assert len(mentions) == 1 and "\n" not in mentions[0], server_log


# --- Length caps -------------------------------------------------------------------------

MB = 1024 * 1024


@pytest.mark.parametrize("field", ["model", "python", "kernel"])
async def test_a_text_field_over_its_cap_is_refused_naming_the_field_and_the_cap(field, workspace, supervisor, api):
    code, reply = await api("runs", "POST", {"path": "ws", "proposer": "offline", field: "x" * 5000})
    assert code == 400, reply
    assert reply["field"] == field
    assert reply["message"].startswith(f"{field} is longer than 1024 characters"), reply["message"][:200]
    assert len(reply["message"]) < 300
    assert not supervisor.children and not (workspace / ".autoresearch").exists()


@pytest.mark.parametrize("route", ["runs", "runs/resume", "runs/stop", "export", "workspaces"])
async def test_a_path_over_its_cap_is_refused(route, workspace, supervisor, api):
    code, reply = await api(route, "POST", {"path": "a/" * 3000})
    assert code == 400, reply
    assert reply["field"] == "path" and "longer than 4096" in reply["message"] and len(reply["message"]) < 300


async def test_a_10_mb_model_is_refused_before_anything_is_written(workspace, supervisor, api):
    code, reply = await api("runs", "POST", {"path": "ws", "proposer": "offline", "model": "x" * (10 * MB)})
    assert code == 413, str(reply)[:300]
    assert "64 KiB" in reply["message"] and len(reply["message"]) < 300
    assert not supervisor.children and not (workspace / ".autoresearch").exists()


@pytest.mark.parametrize(
    "route,params,field",
    [
        ("runs", {"path": "x" * 5000}, "path"),
        ("experiments", {"path": "ws", "tag": "t" * 5000}, "tag"),
        ("log", {"path": "ws", "n": "9" * 5000}, "n"),
        ("experiments", {"path": "ws", "limit": "1" * 5000}, "limit"),
        ("experiments", {"path": "ws", "offset": "٣"}, "offset"),  # an Arabic-Indic 3 is not a query number
    ],
)
async def test_a_long_or_odd_query_value_is_a_short_400(route, params, field, workspace, supervisor, api):
    (workspace / ".autoresearch" / "t").mkdir(parents=True)
    (workspace / ".autoresearch" / "t" / "journal.jsonl").write_text(json.dumps(END) + "\n")
    code, reply = await api(route, **params)
    assert code == 400, str(reply)[:300]
    assert reply["field"] == field and len(reply["message"]) < 300, reply


async def test_an_unknown_field_with_a_long_name_is_a_short_400(workspace, supervisor, api):
    code, reply = await api("runs", "POST", {"path": "ws", "k" * 10000: 1})
    # The name is cut; the rest is the list of the fields POST runs takes.
    assert code == 400 and len(reply["message"]) < 500 and len(reply["field"]) <= 100, str(reply)[:300]


def test_a_whole_number_written_as_a_float_reads_as_an_int(tmp_path):
    from jupyterlab_autoresearch.read.journal import JournalTail
    from jupyterlab_autoresearch.read.workspaces import log_path

    (tmp_path / "journal.jsonl").write_text(line(START, n="3.0") + "\n")
    (record,) = JournalTail(tmp_path / "journal.jsonl").read_new()
    assert type(record["n"]) is int and log_path(tmp_path, "t", record["n"]).name == "0003.log"
