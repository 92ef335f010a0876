"""The environment of the server's git commands in a workspace, as the engine's (src/engine/git/git-guard.ts):
git obeys nothing a training run could have written there. Without the sandbox a run can write
.git/config, .git/hooks and .gitattributes, and git would run what they name (hooks, fsmonitor,
filters, diff drivers) inside the server. So system and global config are not read, and config
of the command's own scope (which wins over every file) switches those off: fixed keys for what
has a fixed name, and one override per driver the workspace's config names, found by reading
its config (which runs nothing) whenever one of its files changed. An include is refused."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import threading
from pathlib import Path

FIXED: list[tuple[str, str]] = [
    # /dev/null/<hook> is never a file, so no hook runs.
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.sshCommand", "ssh"),
    ("core.askPass", ""),
    ("credential.helper", ""),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.alternateRefsCommand", ""),
    ("diff.external", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", ""),
    ("gpg.openpgp.program", ""),
    ("gpg.x509.program", ""),
    ("gpg.ssh.program", ""),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("uploadpack.packObjectsHook", ""),
    ("submodule.recurse", "false"),
    ("protocol.ext.allow", "never"),
]

DRIVER_OFF = {
    "filter": [("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")],
    "diff": [("command", ""), ("textconv", "")],
    "merge": [("driver", "")],
}

KEPT_GIT_ENV = re.compile(r"^GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)$|^GIT_EXEC_PATH$")
DRIVER_KEY = re.compile(r"^(filter|diff|merge)\.(.+)\.[^.]+$", re.IGNORECASE)
INCLUDE_KEY = re.compile(r"^include\.path$|^includeif\..*\.path$", re.IGNORECASE)


class GitConfigRefused(Exception):
    """The workspace's git config includes another file, which the server will not run git under."""


def _user_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or KEPT_GIT_ENV.match(k)}
    env.pop("SSH_ASKPASS", None)
    return env


_safe_dirs: list[str] | None = None
_lock = threading.Lock()
_scans: dict[str, tuple[str, list[tuple[str, str]]]] = {}


def _safe_directories() -> list[str]:
    """The user's safe.directory entries, read once from system and global config: hidden from git itself."""
    global _safe_dirs
    if _safe_dirs is None:
        try:
            done = subprocess.run(
                ["git", "config", "--null", "--includes", "--get-all", "safe.directory"],
                cwd="/",
                capture_output=True,
                timeout=10,
                env={**_user_env(), "GIT_DIR": "/nonexistent/.git"},
            )
            found = done.stdout.decode(errors="replace").split("\0") if done.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired):
            found = []
        _safe_dirs = [d for d in found if d]
    return _safe_dirs


def _env(extra: list[tuple[str, str]]) -> dict[str, str]:
    env = {
        **_user_env(),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "GIT_EDITOR": "false",
    }
    # GIT_CONFIG_COUNT rather than -c: a driver's name may hold '=' or '.', which -c would misread.
    pairs = [*FIXED, *(("safe.directory", d) for d in _safe_directories()), *extra]
    env["GIT_CONFIG_COUNT"] = str(len(pairs))
    for i, (k, v) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = k
        env[f"GIT_CONFIG_VALUE_{i}"] = v
    return env


def _read_small(file: Path) -> str:
    """A tiny file's text; a FIFO or anything odd in its place reads as nothing rather than blocking."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        st = os.fstat(fd)
        return os.read(fd, 65536).decode(errors="replace") if st.st_size < 65536 and _regular(st) else ""
    finally:
        os.close(fd)


def _regular(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode)


def config_key(ws: Path) -> str:
    """A key of the identity and times of the config files git reads in ws: it changes whenever
    one is written, replaced or created. A few stats."""
    dot_git = ws / ".git"
    try:
        st = os.lstat(dot_git)
    except OSError:
        return "no .git"
    git_dir = dot_git
    if not os.path.isdir(dot_git):
        m = re.search(r"^gitdir:\s*(.+?)\s*$", _read_small(dot_git), re.MULTILINE)
        if not m:
            return f"odd .git {st.st_ino}:{st.st_mtime_ns}"
        git_dir = (ws / m.group(1)).resolve()
    common_file = git_dir / "commondir"
    common = (git_dir / _read_small(common_file).strip()).resolve() if common_file.exists() else git_dir
    parts = [str(git_dir), str(common)]
    for file in (common / "config", git_dir / "config.worktree"):
        try:
            s = os.lstat(file)
        except OSError:
            parts.append("-")
            continue
        if not _regular(s):
            raise GitConfigRefused(
                f"{file} is not a regular file; make it one (the server does not follow links there)"
            )
        parts.append(f"{s.st_ino}:{s.st_size}:{s.st_mtime_ns}:{s.st_ctime_ns}")
    return "|".join(parts)


def scan_config(listing: str, where: Path) -> list[tuple[str, str]]:
    """The overrides a `git config --list --null` listing's drivers need; an include is refused."""
    overrides: list[tuple[str, str]] = []
    seen: set[str] = set()
    for entry in listing.split("\0"):
        key, _, value = entry.partition("\n")
        if not key:
            continue
        if INCLUDE_KEY.match(key):
            raise GitConfigRefused(
                f"the git config of {where} includes another file ({key} = {value}); the server runs git only "
                f"with config it has read itself: remove it with `git -C {where} config --unset-all '{key}'`"
            )
        m = DRIVER_KEY.match(key)
        if m:
            section = m.group(1).lower()
            driver = f"{section}.{m.group(2)}"
            if driver not in seen:
                seen.add(driver)
                overrides += [(f"{driver}.{k}", v) for k, v in DRIVER_OFF[section]]
    return overrides


def guarded_env(ws: Path) -> dict[str, str]:
    """The environment for a git command in the workspace ws (its .git gone: git fails, it never
    goes up to an enclosing repository). GitConfigRefused when its config includes a file."""
    ws = Path(ws).resolve()
    key = config_key(ws)
    with _lock:
        cached = _scans.get(str(ws))
    if cached is not None and cached[0] == key:
        overrides = cached[1]
    else:
        done = subprocess.run(
            ["git", "config", "--list", "--null", "--no-includes"],
            cwd=ws,
            capture_output=True,
            timeout=10,
            env={**_env([]), "GIT_CEILING_DIRECTORIES": str(ws.parent)},
        )
        overrides = scan_config(done.stdout.decode(errors="replace"), ws) if done.returncode == 0 else []
        if done.returncode == 0:
            with _lock:
                _scans[str(ws)] = (key, overrides)
    return {**_env(overrides), "GIT_CEILING_DIRECTORIES": str(ws.parent), "GIT_WORK_TREE": str(ws)}
