"""Finding the bundled engine and a Node.js >= 20 to run it with."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

MIN_NODE_MAJOR = 20
NODE_ENV_VAR = "AUTORESEARCH_NODE"
SERVER_HOST = "the Jupyter server host"


def install_hint(where: str = SERVER_HOST) -> str:
    """What to do when no usable Node.js is found."""
    return (
        f"Node.js >= {MIN_NODE_MAJOR} is required on {where}; install it from "
        "https://nodejs.org/en/download (or the system's package manager) and put `node` "
        f"on the PATH, or set {NODE_ENV_VAR} to its full path."
    )


def engine_path() -> Path:
    """Path of the engine bundle shipped inside this package (built by `npm run build:engine`)."""
    return Path(__file__).resolve().parent / "engine" / "autoresearch.cjs"


@dataclass(frozen=True)
class NodeInfo:
    """The Node.js found on this host; `ok` is false with a `message` when it cannot run the engine."""

    ok: bool
    path: str | None
    version: str | None
    required: str
    message: str | None

    def to_json(self) -> dict:
        return asdict(self)


def find_node(where: str = SERVER_HOST) -> NodeInfo:
    """Locates `node` ($AUTORESEARCH_NODE, else the PATH) and checks that its version is >= 20.

    `where` names the machine in the message given when none fits.
    """

    def _fail(path: str | None, version: str | None, problem: str) -> NodeInfo:
        return NodeInfo(False, path, version, f">={MIN_NODE_MAJOR}", f"{install_hint(where)} {problem}")

    configured = os.environ.get(NODE_ENV_VAR)
    path = shutil.which(configured) if configured else shutil.which("node")
    if path is None:
        problem = f"{NODE_ENV_VAR}={configured!r} is not an executable." if configured else "No `node` on the PATH."
        return _fail(configured, None, problem)
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=15, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as err:
        return _fail(path, None, f"`{path} --version` failed ({err}).")
    match = re.match(r"v?(\d+)\.", out)
    if match is None:
        return _fail(path, out or None, f"`{path} --version` printed {out!r}, not a version.")
    if int(match.group(1)) < MIN_NODE_MAJOR:
        return _fail(path, out, f"{path} is Node.js {out}, too old.")
    return NodeInfo(True, path, out, f">={MIN_NODE_MAJOR}", None)
