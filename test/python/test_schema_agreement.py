"""The server's check of a journal line is the engine's: journal_schema.py validates against the
JSON Schema the build writes from src/core/journal/journal.ts's zod schema. A real engine's step-mode run
writes every record type, each valid here; then every case (a real record changed, or a raw line)
goes to the engine (`autoresearch state` on a journal of that one line, which parses it with zod)
and to journal_schema.parse, and the two verdicts must be the same."""

import copy
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import make_workspace
from jupyterlab_autoresearch.node import engine_path
from jupyterlab_autoresearch.read.journal_schema import RecordProblem, checks, parse
from jupyterlab_autoresearch.read.run_state import shape_problem

DROP = object()
SAFE = 2**53 - 1


def _engine(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["node", str(engine_path()), *args], capture_output=True, text=True, timeout=timeout)


def _wait_lines(journal: Path, needle: str, count: int, timeout: float = 90) -> None:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if journal.is_file() and journal.read_text().count(needle) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {count} × {needle} in {journal}")


@pytest.fixture(scope="module")
def step_run(engine_bundle, tmp_path_factory):
    """A real run in step mode: #1 rejected, step mode switched off, #2 approved, #3 unreviewed;
    measured twice for the noise, so every record type and two run purposes are written."""
    ws = make_workspace(tmp_path_factory.mktemp("agree") / "ws", sleep=0.05)
    journal = ws / ".autoresearch" / "t1" / "journal.jsonl"
    argv = ["run", str(ws), "--tag", "t1", "--proposer", "offline", "--step", "--max-experiments", "3"]
    engine = subprocess.Popen(
        ["node", str(engine_path()), *argv, "--noise-runs", "2", "--python", sys.executable],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_lines(journal, '"event":"pending"', 1)
        assert _engine("reject", str(ws), "--note", "too timid").returncode == 0
        _wait_lines(journal, '"event":"pending"', 2)
        assert _engine("step", str(ws), "off").returncode == 0
        assert _engine("approve", str(ws)).returncode == 0
        _, err = engine.communicate(timeout=120)
        assert engine.returncode == 0, err
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    return ws, journal.read_text().splitlines()


def test_every_record_the_engine_writes_is_valid_here(step_run):
    ws, lines = step_run
    records = [parse(line.encode()) for line in lines]
    assert (
        {r["type"] for r in records}
        == set(checks())
        == {
            "run_start",
            "experiment_start",
            "run",
            "experiment",
            "review",
            "run_end",
        }
    )
    assert {r["event"] for r in records if r["type"] == "review"} == {"pending", "decision", "mode"}
    assert {r["purpose"] for r in records if r["type"] == "run"} >= {"measure", "noise"}
    # Parsed here as json.loads reads them (ints stay ints, floats floats).
    assert records == [json.loads(line) for line in lines]
    # And its state.json, as the engine wrote it during the run and as `autoresearch state` rewrites it.
    state_file = ws / ".autoresearch" / "t1" / "state.json"
    assert shape_problem(json.loads(state_file.read_text())) is None
    state_file.unlink()
    assert _engine("state", str(ws), "--tag", "t1").returncode == 0
    assert shape_problem(json.loads(state_file.read_text())) is None


def _engine_takes(folder: Path, line: str) -> bool:
    """Whether the engine reads `line` as a journal record (zod's verdict)."""
    (folder / ".autoresearch" / "t").mkdir(parents=True)
    (folder / ".autoresearch" / "t" / "journal.jsonl").write_text(line + "\n")
    done = _engine("state", str(folder), "--tag", "t")
    if done.returncode == 0:
        return True
    assert "line 1 is" in done.stderr, done.stderr  # refused the line, not failed otherwise
    return False


def _python_says(line: str) -> str | None:
    """None when journal_schema takes the line, else its refusal."""
    try:
        parse(line.encode())
    except RecordProblem as err:
        return str(err)
    return None


def cases(first: dict[str, dict]) -> list[tuple[str, str, str | None]]:
    """(name, line, a part of the refusal here, None for a valid line)."""

    def changed(kind: str, *edits) -> str:
        """The engine's `kind` record as a line, each (path, raw JSON text or DROP) applied."""
        record = copy.deepcopy(first[kind])
        marks = {}
        for i, (path, raw) in enumerate(edits):
            *parents, last = path
            target = record
            for part in parents:
                target = target[part]
            if raw is DROP:
                del target[last]
            else:
                target[last] = f"@{i}@"
                marks[f'"@{i}@"'] = raw
        text = json.dumps(record)
        for mark, raw in marks.items():
            text = text.replace(mark, raw)
        return text

    valid = [(f"engine's {kind}", json.dumps(record), None) for kind, record in first.items()]
    valid += [
        ("n 3.0", changed("experiment_start", (("n",), "3.0")), None),
        ("n 1e2", changed("experiment_start", (("n",), "1e2")), None),
        ("n at 2^53 - 1", changed("experiment_start", (("n",), str(SAFE))), None),
        ("worker 2", changed("experiment_start", (("worker",), "2")), None),
        ("k 1.0 in runs", changed("experiment", (("runs", 0, "k"), "1.0")), None),
        ("tokens 5.0", changed("experiment", (("usage", "input_tokens"), "5.0")), None),
        ("an unknown field", changed("run_end", (("extra",), '{"x": [1, "y"]}')), None),
        ("metric 1e308", changed("experiment", (("metric",), "1e308")), None),
        ("metric -0.0", changed("experiment", (("metric",), "-0.0")), None),
        ("metric 1e-400", changed("experiment", (("metric",), "1e-400")), None),
        ("metric past 2^53", changed("experiment", (("metric",), str(2**53 + 1))), None),
        ("metric a 300-digit int", changed("run_end", (("best_metric",), "1" + "0" * 300)), None),
        ("exit_code null", changed("run", (("exit_code",), "null")), None),
        ("commit null", changed("experiment", (("commit",), "null")), None),
        ("summary text", changed("run", (("summary",), '{"a": "x", "b": 1}')), None),
        ("meta anything", changed("experiment", (("proposal_meta",), '[null, {"a": [true]}]')), None),
        ("no optional runs", changed("experiment", (("runs",), DROP), (("verdict",), DROP)), None),
    ]
    invalid = [
        (
            "n string",
            changed("experiment_start", (("n",), '"3"')),
            'experiment_start.n is string "3", expected integer',
        ),
        ("n negative", changed("experiment", (("n",), "-1")), "experiment.n is -1, expected 0 or more"),
        ("n fraction", changed("run", (("n",), "2.5")), "run.n is number 2.5, expected integer"),
        ("n 2^53", changed("run", (("n",), str(2**53))), "run.n is 9007199254740992, expected a safe integer"),
        ("n 1e300", changed("experiment_start", (("n",), "1e300")), "experiment_start.n is 1e+300"),
        ("n boolean", changed("experiment_start", (("n",), "true")), "experiment_start.n is boolean true"),
        ("n NaN", changed("experiment_start", (("n",), "NaN")), "holds the number NaN, which is not finite"),
        ("metric 1e999", changed("experiment", (("metric",), "1e999")), "holds the number 1e999, which is not"),
        ("metric -Infinity", changed("run_end", (("best_metric",), "-Infinity")), "number -Infinity, which is not"),
        ("metric a 400-digit int", changed("run", (("metric",), "1" + "0" * 400)), "run.metric is 1000"),
        ("metric string", changed("run", (("metric",), '"high"')), 'run.metric is string "high", expected number or'),
        ("lacks diff", changed("experiment", (("diff",), DROP)), "experiment record lacks 'diff'"),
        ("lacks state", changed("run", (("state",), DROP)), "run record lacks 'state'"),
        ("lacks config", changed("run_start", (("config",), DROP)), "run_start record lacks 'config'"),
        ("status won", changed("experiment", (("status",), '"won"')), "experiment.status 'won' is not one of"),
        ("purpose lucky", changed("run", (("purpose",), '"lucky"')), "run.purpose 'lucky' is not one of"),
        ("reason crashed", changed("run_end", (("reason",), '"crashed"')), "run_end.reason 'crashed' is not one of"),
        ("event maybe", changed("review", (("event",), '"maybe"')), "review.event 'maybe' is not one of"),
        ("unknown type", changed("run_end", (("type",), '"note"')), "unknown record type 'note'"),
        ("no type", changed("run_end", (("type",), DROP)), "record lacks 'type'"),
        ("runs[0].k 0", changed("experiment", (("runs", 0, "k"), "0")), "experiment.runs[0].k is 0, expected 1 or"),
        ("runs[0] lacks metric", changed("experiment", (("runs", 0, "metric"), DROP)), "runs[0] lacks 'metric'"),
        ("runs text", changed("experiment", (("runs",), '"x"')), 'experiment.runs is string "x", expected array'),
        ("spent text", changed("experiment", (("verdict", "spent", "noise"), '"a"')), "experiment.verdict.spent.noise"),
        ("tokens -1", changed("experiment", (("usage", "input_tokens"), "-1")), "experiment.usage.input_tokens is -1"),
        ("tokens 1.5", changed("experiment", (("usage", "output_tokens"), "1.5")), "usage.output_tokens is number 1.5"),
        ("run_s -1", changed("experiment", (("timings", "run_s"), "-1")), "experiment.timings.run_s is -1"),
        ("editable []", changed("run_start", (("config", "editable"), "[]")), "run_start.config.editable has fewer"),
        ("direction min", changed("run_start", (("config", "direction"), '"min"')), "config.direction 'min' is not"),
        ("summary true", changed("run", (("summary",), '{"a": true}')), "run.summary.a is boolean true"),
        ("summary null", changed("experiment", (("summary",), '{"a": null}')), "experiment.summary.a is null"),
        ("commit XYZ", changed("experiment", (("commit",), '"XYZ"')), 'experiment.commit is "XYZ", expected a string'),
        ("commit abc", changed("run", (("commit",), '"abc"')), 'run.commit is "abc", expected a string matching'),
        ("ts empty", changed("review", (("ts",), '""')), "review.ts is empty"),
        ("exit_code 2^60", changed("run", (("exit_code",), str(2**60))), "run.exit_code is 1152921504606846976"),
        ("exit_code true", changed("run", (("exit_code",), "true")), "run.exit_code is boolean true, expected"),
        ("worker 0", changed("experiment_start", (("worker",), "0")), "experiment_start.worker is 0, expected 1"),
        ("an array", "[1]", "not a JSON object"),
        ("a string", '"run"', "not a JSON object"),
        ("null", "null", "not a JSON object"),
        ("garbage", "{oops", "is not JSON"),
    ]
    return valid + invalid


def test_the_verdict_here_is_the_engine_s(step_run, tmp_path):
    _, lines = step_run
    first: dict[str, dict] = {}
    for line in lines:
        record = json.loads(line)
        if record["type"] != "experiment" or ("runs" in record and "verdict" in record):
            first.setdefault(record["type"], record)
    all_cases = cases(first)
    assert len({name for name, _, _ in all_cases}) == len(all_cases)
    with ThreadPoolExecutor(4) as pool:
        engine = list(pool.map(lambda c: _engine_takes(tmp_path / f"case{c[0]}", c[1][1]), enumerate(all_cases)))
    disagree, untested, worded = [], [], []
    for (name, line, says), engine_ok in zip(all_cases, engine, strict=True):
        here = _python_says(line)
        if (here is None) != engine_ok:
            disagree.append(f"{name}: engine {'takes' if engine_ok else 'refuses'} it, here {here or 'taken'}")
        if engine_ok != (says is None):
            untested.append(f"{name}: the engine {'takes' if engine_ok else 'refuses'} it")
        if says is not None and here is not None and says not in here:
            worded.append(f"{name}: {here!r} does not say {says!r}")
    assert not disagree, "\n".join(disagree)
    assert not untested, "cases that no longer test what they say:\n" + "\n".join(untested)
    assert not worded, "\n".join(worded)


def test_where_this_side_is_stricter_on_purpose(step_run, tmp_path):
    """z.unknown() (an experiment's proposal_meta) takes any JSON, but the server serves records
    to a browser as JSON: no Infinity, and no nesting past Python's recursion limit."""
    _, lines = step_run
    experiment = next(json.loads(line) for line in lines if json.loads(line)["type"] == "experiment")
    text = json.dumps({**experiment, "proposal_meta": "@"})
    infinite = text.replace('"@"', '{"x": 1e999}')
    deep = text.replace('"@"', "[" * 5000 + "]" * 5000)
    assert _engine_takes(tmp_path / "infinite", infinite) and _engine_takes(tmp_path / "deep", deep)
    assert _python_says(infinite) == "holds the number 1e999, which is not finite"
    assert _python_says(deep) == "is nested too deeply to be a journal record"


def test_integral_floats_become_ints_only_where_the_schema_says_integer(step_run):
    _, lines = step_run
    experiment = next(json.loads(line) for line in lines if json.loads(line)["type"] == "experiment")
    assert "runs" in experiment and "verdict" in experiment
    usage = {**experiment["usage"], "input_tokens": 7.0}
    runs = [{**ref, "k": float(ref["k"])} for ref in experiment["runs"]]
    text = json.dumps({**experiment, "n": 3.0, "metric": 2.0, "lines_added": 0.0, "usage": usage, "runs": runs})
    assert '"n": 3.0' in text and '"k": 1.0' in text
    record = parse(text.encode())
    assert type(record["n"]) is int and record["n"] == 3
    assert type(record["lines_added"]) is int and type(record["usage"]["input_tokens"]) is int
    assert type(record["metric"]) is float and record["metric"] == 2.0  # a number field stays a float
    assert all(type(ref["k"]) is int for ref in record["runs"])
