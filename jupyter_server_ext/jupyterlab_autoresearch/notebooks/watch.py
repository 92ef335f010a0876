"""A run followed live in any notebook: `watch(path)`.

The cell shows the run's state, the progress chart and the latest experiments as outputs with
display ids, and updates them in place as experiments land: the chart and experiment bundles are
the engine's own (the exported notebook's, as `show` uses), so the experiment renderer draws
them and they are saved as ordinary outputs. It reads only the workspace's files (the journal
and state.json), so any kernel that can read the workspace can watch, and it never writes to
the run. It returns when the run ends, or when the cell is interrupted (the run goes on).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # IPython is imported when watch() is called, as the package promises
    from IPython.display import DisplayHandle

from ..read.run_state import load_state, run_activity
from ..read.status_words import RUNNING, STOPPED
from .markdown_text import markdown_literal, markdown_plain
from .notebook import engine_on, joined, locate_workspace, run_notebook


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def state_words(tag: str, state: dict, watching: str | None = None) -> str:
    """The run's state as one markdown paragraph: status, counts, best, what is in flight or awaits review.
    A description or an end's message is a model's or a run's text: shown literally (no maths from a `$`)."""
    # load_state said "died" of a run no engine works on: one still "running" has a live engine.
    status = run_activity(state, live=state["status"] == RUNNING).replace("-", " ")
    pending = state.get("pending")
    parts = [f"**Run `{tag}`: {status}**"]
    counts = ", ".join(f"{v} {k}" for k, v in state["counts"].items())
    parts.append(_plural(state["experiments"], "experiment") + (f" ({counts})" if counts else ""))
    best, run = state.get("best"), state.get("run") or {}
    if best:
        err = f" ± {best['stderr']:.4f}" if best.get("stderr") else ""
        parts.append(f"best {run.get('metric', 'metric')} {best['metric']:.6f}{err} (#{best['n']})")
    if state.get("sigma") is not None:
        parts.append(f"σ {state['sigma']:.4f}")
    if state["status"] == RUNNING:
        for flight in state.get("in_flight", []):
            parts.append(f"in flight: #{flight['n']} {markdown_literal(flight['description'])}")
        if pending:
            parts.append(
                f"#{pending['n']} {markdown_literal(pending['description'])} awaits review"
                " (the panel, or `autoresearch review`)"
            )
    end = state.get("end")
    if state["status"] == STOPPED and end:
        message = f" ({markdown_literal(end['message'])})" if end.get("message") else ""
        parts.append(f"ended: {end['reason']}{message}")
    if watching:
        parts.append(watching)
    return " · ".join(parts)


def _text(markdown: str) -> dict[str, str]:
    return {"text/markdown": markdown, "text/plain": markdown_plain(markdown)}


class _View:
    """The cell's outputs: the state line, the chart, then the latest experiments (newest first).

    Each output's handle exists before its first display: an interrupt that lands while display()
    is still sending must find the handle, so that the closing words update the state line
    instead of adding a second one."""

    def __init__(self, latest: int):
        from IPython.display import DisplayHandle

        self.handle = DisplayHandle
        self.latest = latest
        self.state = DisplayHandle()
        self.chart = DisplayHandle()
        self.slots: list[DisplayHandle] = []
        self._shown: set[str] = set()

    def _put(self, handle: DisplayHandle, bundle: dict) -> None:
        if handle.display_id in self._shown:
            handle.update(bundle, raw=True)
        else:
            self._shown.add(handle.display_id)
            handle.display(bundle, raw=True)

    def show_state(self, markdown: str) -> None:
        self._put(self.state, _text(markdown))

    def show_run(self, notebook: dict) -> None:
        cells = {c.get("id"): c for c in notebook["cells"] if c["cell_type"] == "code"}
        chart = cells.get("chart")
        if chart and chart.get("outputs"):
            self._put(self.chart, joined(chart["outputs"][0]["data"]))
        experiments = [
            joined(out["data"])
            for cell in notebook["cells"]
            if cell["cell_type"] == "code" and str(cell.get("id", "")).startswith("experiment-")
            for out in cell.get("outputs", [])[:1]
        ]
        newest = experiments[::-1][: self.latest]
        for i, bundle in enumerate(newest):
            if i == len(self.slots):
                self.slots.append(self.handle())
            self._put(self.slots[i], bundle)


def watch(path: str | Path, tag: str | None = None, *, latest: int = 5, interval: float = 1.0) -> None:
    """Shows run `tag` (default: the latest) of the workspace at `path` and keeps it current: its
    state, the progress chart and the `latest` newest experiments, updated in place as they land.
    Returns when the run ends (stopped, or its engine died) or the cell is interrupted."""
    if latest < 1:
        raise ValueError("latest must be at least 1: how many of the newest experiments to show")
    if interval <= 0:
        raise ValueError("interval must be above 0 seconds")
    workspace, chosen, journal = locate_workspace(path, tag, "watch()")
    view = _View(latest)
    drawn_size = -1
    last_words = None
    state: dict | None = None
    try:
        while True:
            live = engine_on(workspace, chosen)
            state = load_state(workspace, chosen, live, where="this machine")
            size = journal.stat().st_size
            words = state_words(chosen, state, None if state["status"] != RUNNING else "watching")
            if words != last_words:
                view.show_state(words)
                last_words = words
            if size != drawn_size:
                # The engine's export, only when the journal grew: one Node.js call an experiment, not a poll.
                view.show_run(run_notebook(workspace, chosen))
                drawn_size = size
            if state["status"] != RUNNING:
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        if state is not None:
            view.show_state(state_words(chosen, state, "stopped watching; the run goes on"))
