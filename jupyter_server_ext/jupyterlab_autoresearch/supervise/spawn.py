"""Starting an engine command detached from the server, its output appended to a log inside the
workspace's `.autoresearch` folder: a run's engine and a transfer study alike."""

from __future__ import annotations

import datetime
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from ..confine import OUTSIDE_STATE, OutsideError, open_inside
from ..errors import EngineFailed, FileInTheWay
from ..read.workspaces import STATE_DIR
from .secrets import SECRETS_FD_ENV, hand_over, secrets_pipe


def spawn_detached(
    argv: list[str],
    ws: Path,
    env: dict[str, str],
    log_file: Path,
    rel: Callable[[Path], str],
    secrets: Mapping[str, str] | None = None,
) -> tuple[subprocess.Popen, str, int]:
    """Starts argv in ws in its own session, stdout and stderr to log_file (after a header line),
    `secrets` handed over on a pipe (env must hold none); returns the process, when it started and
    the log's offset past the header."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.UTC).isoformat()
    try:
        out = open(open_inside(log_file, ws / STATE_DIR, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "ab")
    except OSError as err:
        why = f"it {OUTSIDE_STATE}" if isinstance(err, OutsideError) else err.strerror
        raise FileInTheWay(
            f"cannot write the engine's log {rel(log_file)}: {why}; remove what is in its place"
        ) from None
    with out:
        out.write(f"--- {started} started by the Jupyter server: {' '.join(argv[2:])}\n".encode())
        out.flush()
        log_offset = out.tell()
        # Its own session (and process group): the engine outlives this server, the request and
        # the browser, and a kill can take its whole group. The secrets go on a pipe, so they
        # are never in the engine's /proc/<pid>/environ, which a training run could read.
        read_fd, write_fd = secrets_pipe() if secrets else (None, None)
        try:
            proc = subprocess.Popen(
                argv,
                cwd=ws,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**env, SECRETS_FD_ENV: str(read_fd)} if read_fd is not None else env,
                pass_fds=(read_fd,) if read_fd is not None else (),
            )
        except OSError as err:
            if write_fd is not None:
                os.close(write_fd)
            raise EngineFailed(f"could not start the engine: {err.strerror or err}") from None
        finally:
            if read_fd is not None:
                os.close(read_fd)
    if write_fd is not None:
        hand_over(write_fd, secrets or {})
    return proc, started, log_offset
