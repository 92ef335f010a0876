"""Short engine commands (`init`, `export`, `state`: not a run) and what any engine message relayed
to a client goes through first."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from ..errors import BadRequest, EngineFailed, Unavailable
from ..node import SERVER_HOST, engine_path, find_node
from .run_options import MissingOptions, secret_env
from .secrets import split_secrets


def scrub(text: str) -> str:
    """The text without any proposer's credential: the engine never prints one, but a message
    relayed to the browser must not carry it (the variables come from run-options.json)."""
    try:
        names = secret_env()
    except MissingOptions as err:
        raise Unavailable(str(err)) from None
    for name in names:
        secret = os.environ.get(name)
        if secret and len(secret) >= 8:
            text = text.replace(secret, "[redacted]")
    return text


def server_url(ip: str, port: int, base_url: str, https: bool = False) -> str:
    """This server's URL as an engine on the same host reaches it: loopback unless it listens on one address only."""
    if ip in ("", "0.0.0.0", "localhost", "127.0.0.1"):
        host = "127.0.0.1"
    elif ip in ("::", "::1"):
        host = "[::1]"
    else:
        host = f"[{ip}]" if ":" in ip else ip
    path = base_url if base_url.startswith("/") else f"/{base_url}"
    return f"{'https' if https else 'http'}://{host}:{port}{path if path.endswith('/') else path + '/'}"


def usable_engine(where: str = SERVER_HOST) -> tuple[str, Path]:
    """The Node.js and the engine bundle to run; Unavailable, saying what to install, when either is missing.
    Blocking (`node --version`)."""
    node = find_node(where=where)
    if not node.ok:
        raise Unavailable(node.message or "Node.js is not usable")
    bundle = engine_path()
    if not bundle.is_file():
        raise Unavailable(f"the engine bundle {bundle} is missing; this installation is broken")
    return node.path, bundle


def engine_command(args: list[str], cwd: Path, timeout_s: float = 120, where: str = SERVER_HOST) -> str:
    """Runs `node <bundle> <args>` to its end: its stdout, or its last stderr line as the error
    (exit 1, the engine's refusal of its inputs, is a BadRequest; anything else an EngineFailed).
    Blocking: the server calls it in a thread."""
    node, bundle = usable_engine(where)
    name = f"autoresearch {args[0]}"
    try:
        done = subprocess.run(
            [node, str(bundle), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            cwd=cwd,
            timeout=timeout_s,
            # None of these commands needs a secret: none is handed to them.
            env=split_secrets(os.environ)[0],
        )
    except subprocess.TimeoutExpired:
        raise EngineFailed(f"{name} did not finish within {timeout_s:g} s") from None
    except OSError as err:
        raise EngineFailed(f"could not start {name}: {err.strerror or err}") from None
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.decode(errors="replace").splitlines() if ln.strip()]
        message = scrub(
            (lines[-1] if lines else f"{name} exited with code {done.returncode}").removeprefix("autoresearch: ")
        )
        raise (BadRequest if done.returncode == 1 else EngineFailed)(message)
    return done.stdout.decode(errors="replace").strip()


def export_notebook_text(ws: Path, tag: str, where: str = SERVER_HOST) -> str:
    """Run `tag` of `ws` as the engine exports it: the notebook's JSON text. The engine writes it into
    a private temp folder (0700, this process's own, where no training run can plant anything) and
    it is read back from there: a file is whole once the engine has exited, whatever its size,
    where a pipe gives only what the engine flushed. Blocking."""
    with tempfile.TemporaryDirectory(prefix="autoresearch-export-") as private:
        file = Path(private) / "run.ipynb"
        engine_command(["export", str(ws), "--tag", tag, "--out", str(file)], Path(private), where=where)
        return file.read_bytes().decode("utf-8")
