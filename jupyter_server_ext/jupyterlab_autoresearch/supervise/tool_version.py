"""What `<program> --version` prints, for the Node.js and git the server runs: asked once per
binary, not on every request. A binary replaced or upgraded in place is a new file (another
inode, size or mtime), so it is asked again."""

from __future__ import annotations

import os
import subprocess
import threading

_said: dict[tuple, str] = {}
_lock = threading.Lock()


def version_of(path: str, timeout_s: float = 15) -> str:
    """The stripped output of `path --version`; raises OSError or SubprocessError as subprocess.run
    does (a failure is not remembered: the next call asks again)."""
    st = os.stat(path)  # follows symlinks: the binary itself
    key = (os.path.realpath(path), st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        if key in _said:
            return _said[key]
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=timeout_s, check=True)
    with _lock:
        _said[key] = out.stdout.strip()
    return _said[key]
