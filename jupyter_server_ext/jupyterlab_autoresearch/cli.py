"""`autoresearch` console script: runs the bundled engine with a Node.js >= 20 from this host."""

from __future__ import annotations

import os
import subprocess
import sys

from .node import engine_path, find_node


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
    if os.name == "nt":
        return subprocess.call(command)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(node.path, command)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
