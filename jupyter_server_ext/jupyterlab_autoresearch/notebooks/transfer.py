"""A run's transfer study in a notebook: `load_transfer(path)`.

The engine derives the study's result (src/core/study/transfer.ts) and rewrites it to
`.autoresearch/<tag>/transfer/summary.json` after every run of the study; this reads that file
and never recomputes a verdict, so the CLI, the panel and a notebook say the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DomainError
from ..read.study import summary
from ..read.workspaces import run_tags


def _chosen(path: str | Path, tag: str | None) -> tuple[str, Path]:
    p = Path(path).expanduser().resolve()
    tags = run_tags(p) if p.is_dir() else []
    chosen = tag or (tags[0] if tags else None)
    if chosen is None:
        raise FileNotFoundError(f"no runs in {p} yet; start one with: autoresearch run {p}")
    return chosen, p


def study_of(workspace: Path, tag: str) -> dict[str, Any] | None:
    """The transfer study of run `tag` (its summary.json, read as the server reads it: inside the
    workspace's .autoresearch only), or None when the run has none; ValueError naming the fix when
    the file is not one."""
    try:
        return summary(workspace, tag)
    except DomainError as err:
        raise ValueError(err.message) from None


def load_transfer(path: str | Path, tag: str | None = None):
    """The transfer study of a run (the latest, or `tag`) in workspace `path`: one row per kept
    change (`n`, `commit`, `description`, `delta_search`, `se_search`, `delta_transfer`,
    `se_transfer`, `verdict`, and with --ablate `ablate_delta`, `ablate_se`, `ablate_verdict`), a
    pandas DataFrame whose `attrs["study"]` is the whole summary (`attrs["summary"]` its totals
    and the "N of M changes transferred" line), or a list of dicts without pandas."""
    chosen, workspace = _chosen(path, tag)
    study = study_of(workspace, chosen)
    if study is None:
        raise FileNotFoundError(
            f"run {chosen} has no transfer study yet; start one with: autoresearch transfer {Path(path)} --env AUTORESEARCH_SCALE=2"
        )
    rows = []
    for change in study["changes"]:
        row = {k: v for k, v in change.items() if k not in ("ablate", "search", "transfer")}
        row["runs_search"] = change["search"]["runs"]
        row["runs_transfer"] = change["transfer"]["runs"]
        ablate = change.get("ablate")
        if ablate is not None:
            row.update(ablate_delta=ablate["delta"], ablate_se=ablate["se"], ablate_verdict=ablate["verdict"])
        rows.append(row)
    try:
        import pandas as pd
    except ImportError:
        return rows
    frame = pd.DataFrame(rows)
    frame.attrs["study"] = study
    frame.attrs["summary"] = study["summary"]
    return frame
