"""Trusting an exported notebook: it was written by this machine's engine at the user's request,
so its outputs are as trusted as ones the user made. Jupyter records trust as a signature in the
notary's database (nbformat.sign); the server signs with its contents manager's notary (its
configured database and secret), the `autoresearch export` console script with the default one
that `jupyter trust` uses. The file itself is not changed."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary


def read_notebook(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def sign_notebook(path: Path, notary: NotebookNotary | None = None) -> None:
    """Records `path`'s notebook as trusted by `notary` (default: the user's, as `jupyter trust`).
    A server's notary holds an SQLite connection of the server's thread: call this there."""
    nb = read_notebook(path)
    if notary is not None:
        notary.sign(nb)
        return
    with NotebookNotary() as own:
        own.sign(nb)


def is_trusted(path: Path, notary: NotebookNotary) -> bool:
    return notary.check_signature(read_notebook(path))
