"""Whether this host has the git the engine runs for every commit, reset and worktree."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict, dataclass

from ..node import SERVER_HOST
from .tool_version import version_of


def git_install_hint(where: str = SERVER_HOST) -> str:
    """What to do when git is missing, as the engine's own message says it."""
    return (
        f"git is required on {where}; install it (Debian/Ubuntu: sudo apt-get install git; Fedora: sudo dnf "
        "install git; macOS: xcode-select --install; others: https://git-scm.com/downloads) and put it on the PATH."
    )


@dataclass(frozen=True)
class GitInfo:
    """The git found on this host; `ok` is false with a `message` when there is none that runs."""

    ok: bool
    path: str | None
    version: str | None
    message: str | None

    def to_json(self) -> dict:
        return asdict(self)


def find_git(where: str = SERVER_HOST) -> GitInfo:
    """Locates `git` on the PATH and asks its version. Blocking (a subprocess)."""
    path = shutil.which("git")
    if path is None:
        return GitInfo(False, None, None, f"{git_install_hint(where)} No `git` on the PATH.")
    try:
        out = version_of(path)
    except (OSError, subprocess.SubprocessError) as err:
        return GitInfo(False, path, None, f"{git_install_hint(where)} `{path} --version` failed ({err}).")
    return GitInfo(True, path, out.strip().removeprefix("git version "), None)
