"""A run in any notebook: `load(path)` for the journal as data, `show(path)` for the outputs.

`show` does not rebuild the HTML in Python: it asks the bundled engine for the run's exported
notebook (`autoresearch export DIR --out FILE`, into a private temp folder) and displays that notebook's outputs, so the
panel, the exported `.ipynb` and `show` render one and the same bundles. Without Node.js it
falls back to a `<tag>.ipynb` already exported into the workspace.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from ..confine import open_inside
from ..errors import DomainError
from ..node import engine_path, find_node
from ..read.journal import read_journal
from ..read.run_state import load_state
from ..read.status_words import RESULTS_STATUSES
from ..read.workspaces import JOURNAL_FILE as JOURNAL
from ..read.workspaces import STATE_DIR, run_tags
from ..supervise.engine_commands import export_notebook_text
from ..supervise.engine_info import is_engine_process, read_engine_info
from .markdown_text import markdown_plain
from .transfer import study_of


def _locate(path: str | Path, tag: str | None) -> tuple[Path | None, str | None, Path]:
    """(workspace, tag, journal file) for a workspace folder, a run folder or a journal file."""
    p = Path(path).expanduser().resolve()
    if p.is_file():
        journal = p
    elif (p / JOURNAL).is_file() and tag is None:
        journal = p / JOURNAL
    elif p.is_dir():
        tags = run_tags(p)
        chosen = tag or (tags[0] if tags else None)
        if chosen is None:
            raise FileNotFoundError(f"no runs in {p} yet; start one with: autoresearch run {p}")
        journal = p / STATE_DIR / chosen / JOURNAL
        if not journal.is_file():
            raise FileNotFoundError(f'no run tagged "{chosen}" in {p}')
        return p, chosen, journal
    else:
        raise FileNotFoundError(f"{p} does not exist")
    # A journal in the engine's layout, <workspace>/.autoresearch/<tag>/journal.jsonl, names both.
    in_layout = journal.parent.parent.name == STATE_DIR
    return (journal.parents[2] if in_layout else None), journal.parent.name, journal


def _read_experiments(journal: Path) -> list[dict[str, Any]]:
    """The experiment records of a journal, in order, without their `type` (validated as the server reads it),
    each with the columns of its runs (see `_with_runs`)."""
    return [
        _with_runs({k: v for k, v in r.items() if k != "type"})
        for r in read_journal(journal)
        if r.get("type") == "experiment"
    ]


def _with_runs(row: dict[str, Any]) -> dict[str, Any]:
    """Adds what a table of experiments wants of their runs: `runs` (how many), `run_metrics`
    (each run's metric, None for a crashed one), `se` (the mean's standard error), `sigma` (one
    run's, pooled) and `confirmed`. The runs themselves, with seeds and logs, move to `run_list`.
    A record from before repeats ran once: its metric is its one run's."""
    refs = row.get("runs")
    verdict = row.get("verdict") or {}
    if refs is None:
        ran = row["status"] in RESULTS_STATUSES
        metrics = [row["metric"]] if ran else []
    else:
        row["run_list"] = refs
        metrics = [ref["metric"] for ref in refs]
    row["runs"] = len(metrics)
    row["run_metrics"] = metrics
    row["se"] = verdict.get("se")
    row["sigma"] = verdict.get("sigma")
    row["confirmed"] = bool(verdict.get("confirmed", False))
    return row


def load(path: str | Path, tag: str | None = None):
    """A run's experiment records: a pandas DataFrame (one row per experiment, the record's
    fields as columns) when pandas is importable, else a list of dicts with the same keys.
    `metric` is the mean of the experiment's runs; `runs` counts them, `run_metrics` lists their
    metrics, `se` is the mean's standard error, `sigma` one run's noise and `confirmed` whether
    repeat runs reproduced a keep (`run_list` has each run's seed and log).

    The DataFrame's `attrs` hold the engine's view of the run (its `.autoresearch/<tag>/state.json`):
    `attrs["best"]` is the best as the engine estimates it ({n, commit, metric: the mean over all
    runs of that code, runs, stderr}) and `attrs["run_state"]` the whole state; both None for a
    journal outside a workspace, or (with a warning saying why) when the state cannot be had.
    `attrs["transfer"]` is the run's transfer study (`autoresearch transfer`: its summary, as
    `load_transfer(path).attrs["study"]` has it), or None when the run has none.

    `path` is a workspace folder (the latest run, or `tag`), a run folder or a journal file.
    """
    workspace, chosen, journal = _locate(path, tag)
    rows = _read_experiments(journal)
    try:
        import pandas as pd
    except ImportError:
        return rows
    columns = list(dict.fromkeys(k for row in rows for k in row))
    frame = pd.DataFrame(rows, columns=columns)
    state = _run_state(workspace, chosen) if workspace is not None else None
    frame.attrs["run_state"] = state
    frame.attrs["best"] = state["best"] if state else None
    frame.attrs["transfer"] = _transfer(workspace, chosen) if workspace is not None else None
    return frame


def _transfer(workspace: Path, tag: str) -> dict | None:
    """The run's transfer study, or None; a damaged summary warns (load() still returns the run)."""
    try:
        return study_of(workspace, tag)
    except ValueError as err:
        warnings.warn(f"run {tag}'s transfer study is unreadable: {err}", stacklevel=3)
        return None


def engine_on(workspace: Path, tag: str) -> bool:
    """Whether a live engine works on run `tag` of the workspace."""
    info = read_engine_info(workspace)
    return info is not None and info.tag == tag and is_engine_process(info, workspace)


def _run_state(workspace: Path, tag: str) -> dict | None:
    """The run's state.json, as the server reads it (rewritten when stale and no engine works on it)."""
    try:
        return load_state(workspace, tag, engine_on(workspace, tag), where="this machine")
    except DomainError as err:
        warnings.warn(f"no best for run {tag}: {err.message}", stacklevel=3)
        return None


def joined(data: dict[str, Any]) -> dict[str, Any]:
    """nbformat stores text as lists of lines; display() wants strings."""
    return {k: "".join(v) if isinstance(v, list) and all(isinstance(s, str) for s in v) else v for k, v in data.items()}


def _notebook_from_engine(workspace: Path, tag: str) -> dict[str, Any] | None:
    """The run's notebook as the engine exports it now; None without a usable Node.js or bundle."""
    if not find_node(where="this machine").ok or not engine_path().is_file():
        return None
    try:
        text = export_notebook_text(workspace, tag, where="this machine")
    except DomainError as err:
        raise RuntimeError(err.message) from None
    return json.loads(text)


def locate_workspace(path: str | Path, tag: str | None, caller: str) -> tuple[Path, str, Path]:
    """(workspace, tag, journal) for a workspace or run folder; ValueError for a journal outside one."""
    workspace, chosen, journal = _locate(path, tag)
    if workspace is None or chosen is None:
        raise ValueError(
            f"{path} is not inside a workspace (<workspace>/{STATE_DIR}/<tag>/{JOURNAL}); load() reads it, {caller} needs the workspace"
        )
    return workspace, chosen, journal


def run_notebook(workspace: Path, chosen: str) -> dict[str, Any]:
    """The run as the engine exports it (nbformat JSON), or the `<tag>.ipynb` exported before without Node.js."""
    notebook = _notebook_from_engine(workspace, chosen)
    if notebook is None:
        exported = workspace / f"{chosen}.ipynb"
        if not exported.is_file():
            raise RuntimeError(
                f"{find_node(where='this machine').message or 'the engine bundle is missing'} "
                f"(or export the run first: autoresearch export {workspace} --tag {chosen})"
            )
        # Not through a link nor waiting on a FIFO a training run may have left at the name.
        with open(open_inside(exported, workspace), "rb") as f:
            notebook = json.loads(f.read())
    return notebook


def notebook_outputs(path: str | Path, tag: str | None = None) -> list[dict[str, Any]]:
    """The MIME bundles `show` displays: the run's one-line summary (σ and what trust cost
    included), the chart, then one per experiment."""
    notebook = run_notebook(*locate_workspace(path, tag, "show()")[:2])
    # The export's summary cell is markdown; program.md, its first cell, is left out: it is the
    # researcher's own text and already open beside the notebook.
    summary = [
        {"text/markdown": text, "text/plain": markdown_plain(text)}
        for cell in notebook["cells"]
        if cell["cell_type"] == "markdown" and cell.get("id") == "summary"
        for text in ["".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]]
    ]
    return summary + [
        joined(output["data"])
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") in ("display_data", "execute_result")
    ]


def show(path: str | Path, tag: str | None = None) -> None:
    """Displays a run as notebook outputs: its summary, the progress chart, then each experiment."""
    from IPython.display import display

    for bundle in notebook_outputs(path, tag):
        display(bundle, raw=True)
