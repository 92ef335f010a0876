"""Dollar amounts and quoted text read as text, not maths: in nbconvert's HTML of an exported run,
in show()'s bundles and in watch()'s state line (JupyterLab's rendering: ui-tests/notebook-math.spec.ts).

nbconvert's page typesets with MathJax 2 (tex2jax: `$…$`, processEscapes), which pairs delimiters
within a run of text: consecutive text nodes, cut by any element, skipped inside code, pre and an
element of class tex2jax_ignore. `TextRuns` reads the HTML that way."""

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from conftest import committed_workspace
from jupyterlab_autoresearch.node import engine_path
from jupyterlab_autoresearch.notebooks.markdown_text import LITERAL_DOLLAR, markdown_literal, markdown_plain
from jupyterlab_autoresearch.notebooks.notebook import notebook_outputs
from jupyterlab_autoresearch.notebooks.watch import _text, state_words

nbconvert = pytest.importorskip("nbconvert")

TRAIN = """LEARNING_RATE = 0.001
N_LAYER = 4
print("---")
print("val_bpb:          %.6f" % (1.0 + abs(LEARNING_RATE - 0.004) + abs(N_LAYER - 6) * 0.01))
"""
DESCRIPTION = "cut the budget from $3 to $1 per hour"
MATH = ("$", "\\(", "\\[", "\\begin{")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A real run measured with repeats (so the summary has trust figures in dollars), given a
    proposer's cost and a description with dollars as a claude run's journal has them."""
    ws = tmp_path_factory.mktemp("ws")
    committed_workspace(ws, TRAIN)
    argv = ["run", str(ws), "--tag", "t1", "--max-experiments", "3", "--proposer", "offline", "--noise-runs", "2"]
    run = subprocess.run(
        [shutil.which("node"), str(engine_path()), *argv, "--python", sys.executable],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    journal = ws / ".autoresearch" / "t1" / "journal.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    for r in records:
        if r["type"] == "experiment" and r["n"] > 0:
            r["cost_usd"] = 0.21
            r["description"] = DESCRIPTION if r["n"] == 1 else r["description"]
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    return ws


class TextRuns(HTMLParser):
    """The runs of text MathJax 2 searches for maths, with the text they hold."""

    SKIP = {"script", "noscript", "style", "textarea", "pre", "code"}

    def __init__(self):
        super().__init__()
        self.stack: list[bool] = []  # whether each open element is skipped
        self.runs: list[str] = []
        self.run = ""

    def _cut(self):
        if self.run:
            self.runs.append(self.run)
        self.run = ""

    def handle_starttag(self, tag, attrs):
        self._cut()
        if tag in ("br", "img", "hr", "meta", "link", "input"):
            return
        skipped = tag in self.SKIP or "tex2jax_ignore" in (dict(attrs).get("class") or "").split()
        self.stack.append(bool(self.stack and self.stack[-1]) or skipped)

    def handle_endtag(self, tag):
        self._cut()
        if self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if not (self.stack and self.stack[-1]):
            self.run += data


def math_runs(html: str) -> list[str]:
    """Runs of text MathJax 2 would typeset something in: a `$…$` pair, or a LaTeX opener."""
    parser = TextRuns()
    parser.feed(html)
    parser._cut()
    return [r for r in parser.runs if r.count("$") >= 2 or any(m in r for m in MATH[1:])]


def test_nbconvert_html_of_the_export_has_no_maths_and_shows_the_dollars(workspace, tmp_path):
    out = tmp_path / "t1.ipynb"
    export = subprocess.run(
        [shutil.which("node"), str(engine_path()), "export", str(workspace), "--tag", "t1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert export.returncode == 0, export.stderr
    html, _ = nbconvert.HTMLExporter().from_filename(str(out))
    body = html[html.index("<body") :]
    body = body[: body.rindex("</body>")]
    assert math_runs(body) == []
    # The amounts are there, as text: cost, and trust per 0.001 gained.
    parser = TextRuns()
    parser.feed(body)
    shown = "".join(parser.runs) + parser.run
    assert "proposals cost $0.6300" in shown
    assert "$0.2100 per 0.001 gained" in html.replace("<span>$</span>", "$")
    assert DESCRIPTION in html


def test_the_old_escape_would_have_been_maths_in_nbconvert():
    """What the export wrote before (`\\$`): mistune turns it into `$`, and MathJax 2 pairs them."""
    html = nbconvert.filters.markdown2html_mistune("proposals cost \\$0.63 · trust: \\$0.21 per 0.001 gained")
    assert math_runs(html) != []
    literal = nbconvert.filters.markdown2html_mistune(
        f"proposals cost {LITERAL_DOLLAR}0.63 · trust: {LITERAL_DOLLAR}0.21 per 0.001 gained"
    )
    assert math_runs(literal) == []


def test_show_gives_the_summary_as_markdown_without_dollars_and_as_plain_text_with_them(workspace):
    summary = notebook_outputs(workspace)[0]
    assert "$" not in summary["text/markdown"]
    assert "proposals cost $0.6300" in summary["text/plain"]
    assert "<span>" not in summary["text/plain"]
    assert math_runs(nbconvert.filters.markdown2html_mistune(summary["text/markdown"])) == []


@pytest.mark.parametrize(
    "text",
    [
        DESCRIPTION,
        "scale by \\(\\sqrt{d}\\) as in \\begin{equation}x\\end{equation}",
        "**bold** _it_ [link](http://x) <b>html</b> `code` # heading",
        "a \\$ and a \\\\ and $$x$$",
    ],
)
def test_a_models_text_in_watch_reads_as_written(text):
    state = {
        "status": "running",
        "counts": {"keep": 1},
        "experiments": 1,
        "pending": {"n": 2, "description": text, "since": "2026-01-01T00:00:00.000Z"},
    }
    bundle = _text(state_words("t1", state))
    html = nbconvert.filters.markdown2html_mistune(bundle["text/markdown"])
    assert math_runs(html) == []
    quoted = html[html.index("#2 ") : html.index(" awaits review")]
    assert not any(tag in quoted for tag in ("<strong>", "<em>", "<a ", "<b>", "<code>", "<h1")), quoted
    assert f"#2 {text} awaits review" in bundle["text/plain"]


def test_markdown_literal_and_plain_are_inverse_for_punctuation():
    text = "a $1 \\ b *c* `d` [e](f) <g> & h_i"
    md = markdown_literal(text)
    assert "$" not in md
    assert markdown_plain(md) == text
