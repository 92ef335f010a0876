"""Trusting an exported notebook: it was written by this machine's engine at the user's request,
so its outputs are as trusted as ones the user made. Jupyter records trust as a signature in the
notary's database (nbformat.sign); the server signs with its contents manager's notary (its
configured database and secret), the `autoresearch export` console script with the default one
that `jupyter trust` uses. The file itself is not changed.

A signature makes a notebook's outputs (HTML, JavaScript) run when it opens, so only what the
engine wrote is signed: the server signs the notebook text it wrote itself, and a file is read
without following a link or waiting on a FIFO a training run may have left in its place."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary


class NotANotebookFile(OSError):
    """The path is not a regular file (a link, a FIFO, a folder): nothing is read or signed."""


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook at `path`, read only if it is a regular file (no link followed, no FIFO waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotANotebookFile(f"{path} is not a regular file; it is not read nor signed")
        os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "r", encoding="utf-8") as f:
            return nbformat.read(f, as_version=4)
    except OSError as err:
        if err.errno == errno.ELOOP:  # a symbolic link at the last part of the path
            raise NotANotebookFile(f"{path} is a symbolic link; it is not read nor signed") from None
        raise
    finally:
        os.close(fd)


def sign_node(nb: nbformat.NotebookNode, notary: NotebookNotary | None = None) -> None:
    """Records the notebook `nb` (its content, not a file) as trusted by `notary` (default: the user's)."""
    if notary is not None:
        notary.sign(nb)
        return
    with NotebookNotary() as own:
        own.sign(nb)


def sign_notebook(path: Path, notary: NotebookNotary | None = None) -> None:
    """Records `path`'s notebook as trusted by `notary` (default: the user's, as `jupyter trust`).
    A server's notary holds an SQLite connection of the server's thread: call this there."""
    sign_node(read_notebook(path), notary)


def is_trusted(path: Path, notary: NotebookNotary) -> bool:
    return notary.check_signature(read_notebook(path))
