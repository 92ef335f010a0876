"""The event stream's run follower on its own: journal bytes, log bytes and state.json in, messages
out; no socket, no server, no file (the records are the noise-aware engine's, written by hand)."""

import json

from test_noise_journal import noisy_records, run

from jupyterlab_autoresearch.read.follower import LOG_BACKLOG, Liveness, LogBytes, LogWanted, RunFollower
from jupyterlab_autoresearch.read.run_state import empty_state, with_liveness

END = {
    "type": "run_end",
    "ts": "2026-01-01T00:00:00Z",
    "reason": "stop",
    "message": None,
    "best_commit": None,
    "best_metric": None,
}
IDLE = Liveness(live=False, pid=None, stopping=False, engine_tag=None)


def follower(since: int = 0) -> RunFollower:
    return RunFollower(
        "t",
        since,
        "ws/.autoresearch/t/journal.jsonl",
        lambda n, i: f"ws/.autoresearch/t/logs/{n:04d}{'' if i == 1 else f'-{i}'}.log",
        lambda n: f"experiment {n}'s log resolves outside ws/.autoresearch",
    )


def lines(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def state(records: int, in_flight=(), status="running") -> dict:
    return {**empty_state("t"), "records": records, "status": status, "in_flight": list(in_flight)}


def flight(n: int, runs: int) -> dict:
    return {"n": n, "worker": None, "description": f"experiment {n}", "ts": "ts", "parent_commit": "c", "runs": runs}


def kinds(messages) -> list[str]:
    return [m["type"] for m in messages]


def test_records_go_out_in_bounded_batches_from_since():
    ends = [{**END, "message": str(i)} for i in range(1200)]
    out = follower().journal(lines(ends))
    assert [(m["start"], len(m["records"])) for m in out] == [(0, 500), (500, 500), (1000, 200)]
    assert [r["message"] for m in out for r in m["records"]] == [str(i) for i in range(1200)]
    rest = follower(since=1100).journal(lines(ends))
    assert [(m["start"], len(m["records"])) for m in rest] == [(1100, 100)]
    assert follower(since=5000).journal(lines(ends)) == []


def test_a_line_without_its_newline_waits_for_it():
    f = follower()
    text = lines([END])
    assert f.journal(text[:10]) == []
    (message,) = f.journal(text[10:])
    assert message == {"type": "records", "start": 0, "records": [END]}
    assert f.count == 1


def test_a_bad_line_is_said_once_after_the_good_records_and_reads_stop():
    f = follower()
    out = f.journal(lines([END]) + b"{oops\n" + lines([END]))
    assert kinds(out) == ["records", "error"]
    assert len(out[0]["records"]) == 1
    assert out[1]["message"].startswith("ws/.autoresearch/t/journal.jsonl line 2 is not JSON")
    assert "delete that line" in out[1]["message"]
    assert f.broken and f.journal(lines([END])) == [] and f.count == 1


def test_run_state_is_sent_when_it_matches_the_records_and_each_time_it_changes():
    f = follower()
    f.journal(lines([END, END]))
    assert f.run_state(state(1)) == []  # behind the records read: not sent, not taken
    assert f.run_state(state(3)) == []  # ahead of them: neither
    (message,) = f.run_state(with_liveness(state(2), live=False))
    assert message == {"type": "run_state", "run_state": {**state(2), "status": "died"}}
    assert f.run_state(with_liveness(state(2), live=False)) == []  # unchanged: not again
    (again,) = f.run_state(state(2, status="stopped"))
    assert again["run_state"]["status"] == "stopped"
    assert f.run_state(None) == []


def test_the_log_followed_is_the_newest_flight_s_current_run_from_a_bounded_backlog():
    f = follower()
    records = noisy_records()  # experiment 3 in flight, its first run journaled
    f.journal(lines(records))
    assert f.wanted is None  # nothing known in flight until state.json says so
    out = f.run_state(state(len(records), [flight(3, 1)]))
    assert kinds(out) == ["run_state"]
    assert f.wanted == LogWanted(3, 2, None)

    # The backlog of a long log starts mid-line: the cut line is not shown.
    backlog = b"x" * 10 + b"\nstep 1\nstep 2\npart"
    (log,) = f.log(LogBytes(backlog, at=LOG_BACKLOG))
    assert log == {
        "type": "log",
        "n": 3,
        "path": "ws/.autoresearch/t/logs/0003-2.log",
        "reset": True,
        "lines": ["step 1", "step 2"],
    }
    assert f.wanted == LogWanted(3, 2, LOG_BACKLOG + len(backlog))
    assert f.log(LogBytes(b"", f.wanted.offset)) == []

    # The run ends: its last lines (the unfinished one too) go out before the record that ends it.
    out = f.journal(lines([run(3, 2, 0.991, "confirm", 2)]), LogBytes(b"ial\nlast", f.wanted.offset))
    assert kinds(out) == ["log", "records"]
    assert out[0]["lines"] == ["partial", "last"] and out[0]["reset"] is False
    assert f.wanted is None
    f.run_state(state(len(records) + 1, [flight(3, 2)]))
    assert f.wanted == LogWanted(3, 3, None)
    (log,) = f.log(LogBytes(b"third run\n", at=0))
    assert log["path"].endswith("0003-3.log") and log["lines"] == ["third run"] and log["reset"]


def test_a_newer_experiment_in_flight_takes_the_log_and_finishes_the_old_one():
    f = follower()
    f.journal(lines([END]))
    f.run_state(state(1, [flight(1, 0)]))
    f.log(LogBytes(b"one\nunfinished", at=0))
    out = f.run_state(state(1, [flight(1, 0), flight(2, 0)]))
    assert kinds(out) == ["run_state", "log"]
    assert out[1]["n"] == 1 and out[1]["lines"] == ["unfinished"]
    assert f.wanted == LogWanted(2, 1, None)


def test_a_log_that_cannot_be_read_is_said_once_and_the_records_keep_coming():
    f = follower()
    f.journal(lines([END]))
    f.run_state(state(1, [flight(0, 0)]))
    (error,) = f.log(LogBytes(None))
    assert error == {"type": "error", "message": "experiment 0's log resolves outside ws/.autoresearch"}
    assert f.log(LogBytes(None)) == []
    assert kinds(f.journal(lines([END]))) == ["records"]


def test_the_state_message_goes_out_when_it_changes():
    f = follower()
    f.journal(lines([END]))
    (first,) = f.liveness(IDLE)
    assert first == {
        "type": "state",
        "tag": "t",
        "state": "died",  # no state.json taken yet and no engine
        "pid": None,
        "stopping": False,
        "engine_tag": None,
        "records": 1,
        "in_flight": None,
    }
    assert f.liveness(IDLE) == []
    f.run_state(state(1, [flight(4, 0)], status="stopped"))
    (stopped,) = f.liveness(IDLE)
    assert stopped["state"] == "stopped" and stopped["in_flight"] == {"n": 4, "description": "experiment 4", "ts": "ts"}
    (running,) = f.liveness(Liveness(live=True, pid=42, stopping=True, engine_tag="t"))
    assert (running["state"], running["pid"], running["stopping"], running["engine_tag"]) == ("running", 42, True, "t")
    (other,) = f.liveness(Liveness(live=False, pid=None, stopping=False, engine_tag="next"))
    assert other["state"] == "stopped" and other["pid"] is None and other["engine_tag"] == "next"


def test_an_unreadable_journal_is_said_once():
    f = follower()
    (error,) = f.journal_unreadable("ws/.autoresearch/t/journal.jsonl resolves outside")
    assert error["type"] == "error" and f.broken
    assert f.journal_unreadable("ws/.autoresearch/t/journal.jsonl resolves outside") == []
    assert f.journal(lines([END])) == []


def test_a_records_message_is_sent_as_the_journal_lines_it_read():
    """The replay's JSON is the lines as read (not the records encoded again), and says the same."""
    odd = (
        b'{ "type":"run_end","ts":"2026-01-01T00:00:00Z","reason":"stop","message":"caf\xc3\xa9 \\u00e9 \xe2\x86\x92",'
        + (b'"best_commit":null,"best_metric":1.0}')
    )
    f = follower()
    (message,) = f.journal(lines([END]) + odd + b"\n")
    text = message.text()
    assert odd.decode() in text, "the line went out re-encoded"
    assert json.loads(text) == {"type": "records", "start": 0, "records": [END, json.loads(odd)]}
    # From the server's cached reading too, with the count and line numbers going on after it.
    g = follower(since=1)
    (replayed,) = g.replay([END, json.loads(odd)], [lines([END]).rstrip(), odd], 2)
    assert json.loads(replayed.text()) == {"type": "records", "start": 1, "records": [json.loads(odd)]}
    assert g.count == 2
    (error,) = g.journal(b"{oops\n")
    assert "line 3" in error["message"]
    # Without the lines (none kept), the records are encoded.
    (bare,) = follower().replay([END], [], 1)
    assert json.loads(bare.text())["records"] == [END]


def test_a_light_replay_goes_as_rows_under_shapes_named_once():
    """The cached light form's rows: each shape (type, then keys) named once per message, each
    record its shape's index and its values; read back, the lightened records exactly."""
    from test_api import from_rows

    from jupyterlab_autoresearch.read.follower import LIGHT_FORM

    records = noisy_records()
    light = [LIGHT_FORM.make(r) for r in records]
    f = follower()
    (message,) = f.replay(light, [LIGHT_FORM.encode(r) for r in light], len(records))
    sent = json.loads(message.text())
    assert set(sent) == {"type", "start", "shapes", "rows"} and sent["start"] == 0
    shapes = sent["shapes"]
    assert len(shapes) == len({tuple(s) for s in shapes}) < len(records)
    assert from_rows(sent) == light
    # A record of its type alone is its shape's index alone.
    (lone,) = follower().replay([{"type": "x"}], [LIGHT_FORM.encode({"type": "x"})], 1)
    assert json.loads(lone.text())["rows"] == [[0]]
