"""Workspaces on disk: resolving API paths, finding workspaces, their runs and their engine."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
from pathlib import Path

from ..confine import inside
from ..generated import generated
from ..supervise.git_guard import GitConfigRefused, guarded_env

# The engine's file names and tag rule, as the build writes them from src/core/journal/layout.ts.
LAYOUT = generated("layout.json")
STATE_DIR: str = LAYOUT["state_dir"]
STOP_FILE: str = LAYOUT["stop_file"]
ENGINE_FILE: str = LAYOUT["engine_file"]
JOURNAL_FILE: str = LAYOUT["journal_file"]
STATE_FILE: str = LAYOUT["state_file"]
LOGS_DIR: str = LAYOUT["logs_dir"]
# Step mode's files in a run's folder (src/core/step-mode/review.ts): the proposal awaiting review, a
# reviewer's decision, and the switch of the mode while the run goes on.
REVIEW_PENDING_FILE: str = LAYOUT["review_pending_file"]
REVIEW_DECISION_FILE: str = LAYOUT["review_decision_file"]
REVIEW_MODE_FILE: str = LAYOUT["review_mode_file"]
LOG_DIGITS: int = LAYOUT["log_digits"]
# The engine's own tag rule; checked here too so a bad tag never reaches argv.
TAG_RE = re.compile(LAYOUT["tag_pattern"])
TAG_MAX: int = LAYOUT["tag_max"]
TAG_RULE: str = LAYOUT["tag_rule"]
MONTHS: list[str] = LAYOUT["month_tags"]
# A run's branch is this prefix and its tag.
RUN_BRANCH_PREFIX: str = LAYOUT["run_branch_prefix"]
# Folders never worth walking into when looking for workspaces.
SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "venv"}


class PathError(ValueError):
    """An API path that is malformed or points outside the server's root."""


def resolve(root: str | Path, api_path: str) -> Path:
    """Maps a '/'-separated path relative to the server root to an absolute path inside it."""
    if not isinstance(api_path, str):
        raise PathError("must be a string")
    if "\0" in api_path:
        raise PathError("contains a NUL character")
    root_real = Path(os.path.realpath(root))
    target = Path(os.path.realpath(root_real / api_path.strip("/")))
    # realpath first, so a symlink cannot lead outside the root either.
    if target != root_real and root_real not in target.parents:
        raise PathError(f"{api_path!r} is outside the server's root folder")
    return target


def api_path(root: str | Path, target: Path) -> str:
    """The '/'-separated path of `target` relative to the server root ('' for the root)."""
    rel = Path(target).relative_to(os.path.realpath(root))
    return "" if str(rel) == "." else rel.as_posix()


def valid_tag(tag: str) -> bool:
    """Whether a run tag is one the engine accepts (TAG_RULE, in words)."""
    return isinstance(tag, str) and 0 < len(tag) <= TAG_MAX and TAG_RE.fullmatch(tag) is not None


def journal_path(ws: Path, tag: str) -> Path:
    """`.autoresearch/<tag>/journal.jsonl`, as the engine's runPaths names it."""
    return ws / STATE_DIR / tag / JOURNAL_FILE


def state_path(ws: Path, tag: str) -> Path:
    """`.autoresearch/<tag>/state.json`: what the engine derived from the journal (src/core/journal/run-state.ts)."""
    return ws / STATE_DIR / tag / STATE_FILE


def engine_file_path(ws: Path) -> Path:
    """`.autoresearch/engine.json`: the engine that holds (or held) the workspace."""
    return ws / STATE_DIR / ENGINE_FILE


def log_path(ws: Path, tag: str, n: int, run: int = 1) -> Path:
    """`.autoresearch/<tag>/logs/NNNN.log`: experiment n's training output; its i-th run's
    `NNNN-i.log` when the noise-aware rule runs it again (as the engine's runPaths names them)."""
    number = f"{n:0{LOG_DIGITS}d}"
    name = LAYOUT["run_log"] if run <= 1 else LAYOUT["repeat_log"].replace("{i}", str(run))
    return ws / STATE_DIR / tag / LOGS_DIR / name.replace("{n}", number)


def engine_log_path(ws: Path, tag: str) -> Path:
    """Where the engine's own stdout and stderr go when this server starts it."""
    return ws / STATE_DIR / LAYOUT["engine_log"].replace("{tag}", tag)


def run_file(ws: Path, tag: str, name: str) -> Path:
    """A file directly in the run's folder `.autoresearch/<tag>/` (step mode's, say)."""
    return ws / STATE_DIR / tag / name


def transfer_log_path(ws: Path, tag: str) -> Path:
    """Where a transfer study's own stdout and stderr go when this server starts it."""
    return ws / STATE_DIR / LAYOUT["transfer_log"].replace("{tag}", tag)


def transfer_path(ws: Path, tag: str, name: str) -> Path:
    """A file of run `tag`'s transfer study, `.autoresearch/<tag>/transfer/<name>` (its journal, summary.json)."""
    return ws / STATE_DIR / tag / LAYOUT["transfer_dir"] / name


def run_tags(ws: Path) -> list[str]:
    """The run tags of a workspace (those with a journal), most recently active first. A journal
    that resolves outside the workspace's .autoresearch (a symlink there, or the folder itself
    one) is no run of it."""
    state = ws / STATE_DIR
    found: list[tuple[float, str]] = []
    try:
        entries = list(os.scandir(state))
    except OSError:
        return []
    for entry in entries:
        # A folder no tag can name (hidden, say) is no run, as the engine's latestTag has it.
        if not valid_tag(entry.name):
            continue
        journal = journal_path(ws, entry.name)
        try:
            if inside(journal, state):
                found.append((os.stat(journal).st_mtime, entry.name))
        except OSError:
            continue
    return [tag for _, tag in sorted(found, reverse=True)]


def default_tag(now: datetime.datetime | None = None) -> str:
    """Today's tag as the engine makes it, like `nov30`."""
    now = now or datetime.datetime.now()
    return f"{MONTHS[now.month - 1]}{now.day}"


def run_branches(ws: Path) -> set[str]:
    """The tags of the workspace's run branches (`autoresearch/<tag>`), in one git call, as the
    engine lists them (src/engine/workspace/workspace.ts freeRunTag); none where it is no repository, or its
    git config is one the server will not run git under (the engine then says why)."""
    try:
        env = guarded_env(ws)
    except GitConfigRefused:
        return set()
    result = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname:short)", f"refs/heads/{RUN_BRANCH_PREFIX}"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    if result.returncode != 0:
        return set()
    return {line.removeprefix(RUN_BRANCH_PREFIX) for line in result.stdout.splitlines() if line}


def free_tag(ws: Path) -> str:
    """The tag a new run given none gets, by the engine's rule (src/core/journal/layout.ts's freeTag, whose
    form and bound layout.json carries): today's, else the first `<today>-<n>` that neither a
    journal nor a branch holds."""
    base = default_tag()
    branches = run_branches(ws)
    for n in range(1, LAYOUT["tags_per_day"] + 1):
        tag = base if n == 1 else LAYOUT["taken_tag_form"].replace("{base}", base).replace("{n}", str(n))
        if tag not in branches and not journal_path(ws, tag).exists():
            return tag
    raise RuntimeError(f"{LAYOUT['tags_per_day']} runs already have tags from {base}: name this one with --tag")


def find_workspaces(root: Path, depth: int = 2) -> list[Path]:
    """Folders up to `depth` below root with a program.md or an `.autoresearch/` folder (none that resolves outside root)."""
    found: list[Path] = []
    top = Path(os.path.realpath(root))

    def visit(folder: Path, level: int) -> None:
        if (folder / "program.md").is_file() or (folder / STATE_DIR).is_dir():
            found.append(folder)
        if level >= depth:
            return
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            # Hidden folders and dependency trees hold no workspaces a user made, and can be huge.
            if entry.name.startswith(".") or entry.name in SKIP_DIRS:
                continue
            try:
                # A symlink to a folder outside the root lists nothing of that folder.
                if entry.is_dir() and inside(entry.path, top):
                    visit(Path(entry.path), level + 1)
            except OSError:
                continue

    visit(top, 0)
    return found
