"""Two experiments of a run side by side (`GET autoresearch/compare`): their journal records and the
diff of the editable files between the code each one ran.

Where each side's code comes from. A kept experiment's commit stays on the run's branch. A
discarded or crashed one's commit is left behind by the engine's `git reset --hard`: it stays in
the object store (the reflog holds it for `gc.reflogExpireUnreachable`, 30 days by default), and a
`git gc` after that deletes it. So each side is, in this order:

- `commit`: its own commit, while the repository still has that object;
- `journal`: recomposed from the journal — its parent commit (always a best so far, so on the
  branch) with the record's own diff applied in a scratch index (`git apply --cached` against a
  temporary GIT_INDEX_FILE, never the work tree's index). Its blobs are the lost commit's, so the
  diff reads byte for byte as it did before the gc. This is also how an experiment that never got
  a commit (rejected, interrupted early) shows the code it proposed;
- none: no parent either, or a diff that no longer applies. Then `diff` is null and `reason` says
  why; the records are still compared.

The diff is `git diff <a> <b> -- <editable files>`, capped at MAX_DIFF_BYTES (cut at a line's end,
`truncated` set) and killed after GIT_TIMEOUT_S. Blocking: the handler calls `compare` in a thread.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from pathlib import Path

from ..errors import NotFound
from ..supervise.git_guard import GitConfigRefused, guarded_env

# Far beyond a proposal's diff (a few lines to a few hundred); a model that rewrote a file into
# megabytes gets its first MiB and the flag, not a page that hangs the browser.
MAX_DIFF_BYTES = 1024 * 1024
# A diff of two commits of a few source files takes milliseconds; this bounds a broken repository.
GIT_TIMEOUT_S = 20.0


NO_GIT = "git is not installed on the server (GET autoresearch/status says how to install it)"


class GitFailed(Exception):
    """A git command failed, was killed at the timeout, or there is no git: the message says which."""


def git_env(ws: Path, index: str | None = None) -> dict[str, str]:
    """The environment of the server's git commands in a workspace, as the engine's (src/engine/git/git.ts):
    nothing a run planted in its .git or work tree runs (git_guard), and with its .git gone git fails
    rather than use an enclosing repository."""
    try:
        env = guarded_env(ws)
    except GitConfigRefused as e:
        raise GitFailed(str(e)) from None
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    return env


def git(ws: Path, args: list[str], stdin: bytes | None = None, index: str | None = None) -> str:
    """git's stdout for a small answer; GitFailed with git's own message otherwise."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=ws,
            input=stdin,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            env=git_env(ws, index),
        )
    except FileNotFoundError:
        raise GitFailed(NO_GIT) from None
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {args[0]} took longer than {GIT_TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        raise GitFailed(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode(errors="replace")


def capped_diff(ws: Path, a: str, b: str, files: list[str], cap: int | None = None) -> tuple[str, bool]:
    """`git diff a b -- files`, its first `cap` bytes cut at a line's end, and whether it was cut.
    Read through a pipe up to the cap (git is killed past it), so a huge diff never sits in memory."""
    cap = MAX_DIFF_BYTES if cap is None else cap
    args = [
        "git",
        # The editable files are names, never globs or pathspec magic.
        "--literal-pathspecs",
        "diff",
        # Plain text whatever the user's config says: no colour, no external diff or textconv
        # command (those run programs the repository's config names), the usual a/ b/ prefixes.
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        a,
        b,
        "--",
        *files,
    ]
    # stderr to a file, not a pipe: git blocked on a full stderr pipe while stdout is read would hang.
    with tempfile.TemporaryFile() as stderr:
        try:
            proc = subprocess.Popen(
                args, cwd=ws, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL, env=git_env(ws)
            )
        except FileNotFoundError:
            raise GitFailed(NO_GIT) from None
        timer = threading.Timer(GIT_TIMEOUT_S, proc.kill)
        timer.start()
        try:
            data = proc.stdout.read(cap + 1)
            truncated = len(data) > cap
            if truncated:
                proc.kill()  # the rest is not wanted
                data = data[: data.rfind(b"\n", 0, cap) + 1]
            code = proc.wait()
        finally:
            timer.cancel()
            proc.stdout.close()
        stderr.seek(0)
        err = stderr.read(4096)
    if not truncated and code != 0:
        if code < 0:
            raise GitFailed(f"git diff took longer than {GIT_TIMEOUT_S:g} s")
        raise GitFailed(f"git diff failed: {err.decode(errors='replace').strip()}")
    return data.decode(errors="replace"), truncated


def has_commit(ws: Path, commit: str) -> bool:
    """Whether the repository still holds the commit (a discarded experiment's is gc'd in time)."""
    try:
        git(ws, ["cat-file", "-e", f"{commit}^{{commit}}"])
        return True
    except GitFailed as err:
        if str(err) == NO_GIT:
            raise
        return False


def recompose(ws: Path, record: dict) -> str:
    """The tree of the code an experiment ran, rebuilt from its parent and the diff its record
    holds, in a scratch index; GitFailed when the parent is gone or the diff does not apply."""
    parent = record["parent_commit"]
    if not has_commit(ws, parent):
        raise GitFailed(f"its parent commit {parent[:7]} is not in the repository either")
    if not record["diff"].strip():
        return git(ws, ["rev-parse", f"{parent}^{{tree}}"]).strip()
    with tempfile.TemporaryDirectory(prefix="autoresearch-compare-") as scratch:
        index = os.path.join(scratch, "index")
        git(ws, ["read-tree", parent], index=index)
        try:
            git(ws, ["apply", "--cached", "--whitespace=nowarn", "-"], stdin=record["diff"].encode(), index=index)
        except GitFailed as err:
            raise GitFailed(f"its journaled diff does not apply to its parent {parent[:7]} ({err})") from None
        return git(ws, ["write-tree"], index=index).strip()


def side(ws: Path, record: dict) -> tuple[str | None, str | None, str | None]:
    """(tree-ish, source, note) for one experiment: its commit, else its recomposition, else (None, None, why)."""
    n, commit = record["n"], record["commit"]
    if commit is not None and has_commit(ws, commit):
        return commit, "commit", None
    lost = (
        f"#{n} has no commit ({record['status']})"
        if commit is None
        else f"#{n}'s commit {commit[:7]} is no longer in the repository ({record['status']}: reset off the branch, "
        "then removed by git gc)"
    )
    try:
        tree = recompose(ws, record)
    except GitFailed as err:
        if str(err) == NO_GIT:
            raise
        return None, None, f"{lost}, and its code cannot be recomposed: {err}"
    return tree, "journal", f"{lost}: its code is recomposed from its parent and the journal's diff"


def editable_files(records: list[dict]) -> list[str]:
    """Every file a run's configuration made editable, in order (a resume may have changed the list)."""
    files: list[str] = []
    for r in records:
        if r["type"] == "run_start":
            files.extend(f for f in r["config"]["editable"] if f not in files)
    return files


def experiment(records: list[dict], n: int, tag: str, field: str) -> dict:
    """Experiment n's record (its last, should a journal hold two); NotFound naming the field otherwise."""
    found = [r for r in records if r["type"] == "experiment" and r["n"] == n]
    if found:
        return found[-1]
    if any(r["type"] == "experiment_start" and r["n"] == n for r in records):
        raise NotFound(f"experiment {n} of run {tag} has no result yet", field)
    raise NotFound(f"run {tag} has no experiment {n}", field)


def run_config(records: list[dict]) -> dict:
    """The run's latest configuration (a resume writes another run_start)."""
    starts = [r for r in records if r["type"] == "run_start"]
    return starts[-1]["config"] if starts else {}


def compare(ws: Path, tag: str, records: list[dict], a: int, b: int, best: int | None) -> dict:
    """The answer of GET compare for experiments a and b of a run whose records are given."""
    ra = experiment(records, a, tag, "a")
    rb = experiment(records, b, tag, "b")
    config = run_config(records)
    files = editable_files(records)
    out = {
        "tag": tag,
        "metric": config.get("metric"),
        "direction": config.get("direction"),
        "editable": files,
        "best": best,
        "a": ra,
        "b": rb,
        "diff": None,
        "truncated": False,
        "sources": {"a": None, "b": None},
        "reason": None,
    }
    try:
        (ta, sa, note_a), (tb, sb, note_b) = side(ws, ra), side(ws, rb)
    except GitFailed as err:
        return {**out, "reason": str(err)}
    notes = [note for note in (note_a, note_b) if note]
    out["sources"] = {"a": sa, "b": sb}
    out["reason"] = "; ".join(notes) or None
    if ta is None or tb is None or not files:
        if not files:
            out["reason"] = "the run's journal names no editable files"
        return out
    try:
        out["diff"], out["truncated"] = capped_diff(ws, ta, tb, files)
    except GitFailed as err:
        out["reason"] = "; ".join([*notes, str(err)])
    return out
