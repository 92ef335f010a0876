"""`autoresearch` console script: runs the bundled engine with a Node.js from this host (node.py finds it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .node import engine_path, find_node
from .notebooks.signing import sign_notebook


def main(argv: list[str] | None = None) -> int:
    """Replaces this process with `node <engine bundle> <args>` (or runs it, on Windows)."""
    args = sys.argv[1:] if argv is None else argv
    node = find_node(where="this machine")
    if not node.ok:
        print(f"autoresearch: {node.message}", file=sys.stderr)
        return 127
    engine = engine_path()
    if not engine.is_file():
        print(
            f"autoresearch: the engine bundle {engine} is missing; this installation is broken "
            "(from a source tree, run `npm run build:engine`).",
            file=sys.stderr,
        )
        return 1
    command = [node.path, str(engine), *args]
    if args[:1] == ["export"]:
        return _export(command)
    if os.name == "nt":
        return subprocess.call(command)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(node.path, command)
    return 0  # not reached


# The engine's report of a written export (src/engine/cli/cli.ts); `--out -` writes none.
_WROTE = re.compile(r"^wrote (?P<file>.+\.ipynb) \(run ")


def _export(command: list[str]) -> int:
    """`export`, then trust the notebook it wrote, as `jupyter trust` would: the engine (Node.js)
    cannot reach Jupyter's signature database, and an export is the user's own output."""
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    sys.stdout.write(done.stdout)
    wrote = next((m for m in map(_WROTE.match, done.stdout.splitlines()) if m), None)
    if done.returncode != 0 or wrote is None:
        return done.returncode
    try:
        sign_notebook(Path(wrote["file"]))
    except Exception as err:  # a read-only or locked signature database must not fail the export
        print(
            f"autoresearch: exported, but could not mark it trusted ({err}); run: jupyter trust {wrote['file']}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
