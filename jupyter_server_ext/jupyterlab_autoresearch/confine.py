"""Files read or written for a request stay inside the folder they belong to.

A workspace's `.autoresearch/` folder is written by the engine, and also reachable by the
training runs it starts (untrusted code, often a model's, running as the user): a symlink left
there, `logs/0000.log -> ~/.ssh/id_ed25519` or `stop-requested -> ~/.bashrc`, must not make the
server serve or overwrite a file elsewhere. Every path is resolved (os.path.realpath) and must
land inside the folder; the folder itself must be no symlink. Opening re-checks what was
actually opened (through /proc/self/fd where there is one), so swapping a link in between does
not help, and never blocks on a FIFO left in a file's place.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any


class OutsideError(PermissionError):
    """A path that resolves outside the folder it must stay in; the message names both."""


def _top(folder: str | Path) -> str:
    # The folder as its parent's real path plus its own name: a folder that is itself a symlink
    # resolves elsewhere, and so is not inside itself.
    folder = os.fspath(folder)
    return os.path.join(os.path.realpath(os.path.dirname(folder)), os.path.basename(folder))


def _under(real: str, top: str) -> bool:
    return real == top or real.startswith(top + os.sep)


def inside(path: str | Path, folder: str | Path) -> bool:
    """Whether `path`, every symlink followed, is `folder` or below it (and `folder` is no symlink)."""
    top = _top(folder)
    return os.path.realpath(folder) == top and _under(os.path.realpath(path), top)


def open_inside(path: str | Path, folder: str | Path, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """An fd for `path`, a regular file inside `folder`; OutsideError when it resolves elsewhere or is
    not a regular file, FileNotFoundError when it is absent (and flags do not create it)."""
    path = os.fspath(path)
    top = _top(folder)
    if not inside(path, folder):
        raise OutsideError(f"{path} resolves outside {top} (a symlink); the server reads and writes nothing outside it")
    # Opened at its resolved place; O_NOFOLLOW in case the last part became a link since.
    # O_NONBLOCK: opening a FIFO left in a log's place would otherwise wait for a writer forever.
    fd = os.open(os.path.realpath(path), flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutsideError(f"{path} is not a regular file; the server reads and writes only regular files in {top}")
        opened = f"/proc/self/fd/{fd}"
        if os.path.exists(opened) and not _under(os.path.realpath(opened), top):
            raise OutsideError(
                f"{path} resolves outside {top} (a symlink); the server reads and writes nothing outside it"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


# What the server says of a file of the engine's that resolves outside its workspace's state.
OUTSIDE_STATE = "resolves outside the workspace's .autoresearch folder or is not a regular file"

# What read_json_inside says of a file it could not parse, which callers put after its name.
NOT_JSON = "is not JSON"


def read_json_inside(
    path: str | Path, folder: str | Path, max_bytes: int, **loads: Any
) -> tuple[Any, str | None] | None:
    """A JSON file the engine writes inside `folder`: None when absent, else (value, None), or
    (None, what is wrong with it in words) when it is over `max_bytes` or not JSON. OutsideError
    when it resolves outside `folder`. `loads` goes to json.loads (parse_constant, say)."""
    try:
        fd = open_inside(path, folder)
    except FileNotFoundError:
        return None
    with open(fd, "rb") as f:
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        return None, f"{NOT_JSON} (it is over {max_bytes // (1024 * 1024)} MiB)"
    try:
        return json.loads(raw, **loads), None
    except (ValueError, RecursionError) as err:
        return None, f"{NOT_JSON} ({err})"


def read_tail(path: str | Path, folder: str | Path, tail: int) -> tuple[bytes, int]:
    """The last `tail` bytes of a file inside `folder` and its size."""
    with open(open_inside(path, folder), "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - tail))
        return f.read(), size


def read_from(path: str | Path, folder: str | Path, offset: int, limit: int = -1) -> bytes:
    """What a file inside `folder` holds from `offset` on (at most `limit` bytes)."""
    with open(open_inside(path, folder), "rb") as f:
        f.seek(offset)
        return f.read(limit)


def write_inside(path: str | Path, folder: str | Path, data: bytes, append: bool = False) -> None:
    """Writes (or appends) `data` to a file inside `folder`, never through a symlink."""
    fd = open_inside(path, folder, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0))
    with open(fd, "ab" if append else "wb") as f:
        if not append:
            os.ftruncate(fd, 0)  # only once the file opened is known to be the one inside
        f.write(data)


def replace_inside(path: str | Path, folder: str | Path, data: bytes, temp_in: str | Path | None = None) -> None:
    """Writes `data` as the whole of a file inside `folder` atomically (a new file renamed over the
    old, which a reader never sees half written); whatever is in its place, a symlink too, is replaced, never followed.
    The temp file is made exclusively under an unpredictable name, in `temp_in` when given (a folder inside
    `folder` that a training run cannot write, `.autoresearch/`), else beside the file."""
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if not inside(parent, folder):
        raise OutsideError(
            f"{parent} resolves outside {_top(folder)} (a symlink); the server writes nothing outside it"
        )
    where = os.path.realpath(parent)
    if temp_in is not None and inside(temp_in, folder) and os.path.isdir(temp_in):
        where = os.path.realpath(temp_in)
    tmp = os.path.join(where, f".{os.path.basename(path)}.{secrets.token_hex(8)}.tmp")
    fd = open_inside(tmp, folder, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with open(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(os.path.realpath(parent), os.path.basename(path)))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
