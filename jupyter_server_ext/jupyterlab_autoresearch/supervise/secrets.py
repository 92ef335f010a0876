"""The engine's secrets (the proposer's key, the Jupyter token) go to it on a pipe, never in its
environment: /proc/<pid>/environ shows a process's initial environment to every process of its
user, a training run without the sandbox included. The server's own environment stays as the
user started it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ..generated import generated

# The variables holding secrets (a trailing `_` names a prefix), as src/core/config/secrets.ts
# declares them; test/security/secrets-environ.test.ts checks both sides give the same answers.
SECRET_NAMES: tuple[str, ...] = tuple(generated("rules.json")["secret_names"])

# Names the fd the engine reads its secrets from (src/core/config/secrets.ts).
SECRETS_FD_ENV: str = generated("rules.json")["secrets_fd_env"]


def is_secret_name(name: str) -> bool:
    """Whether an environment variable holds a secret the engine keeps from its runs."""
    return any(name.startswith(s) if s.endswith("_") else name == s for s in SECRET_NAMES)


def split_secrets(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """env without its secrets, and the secrets."""
    clean = {k: v for k, v in env.items() if not is_secret_name(k)}
    return clean, {k: v for k, v in env.items() if is_secret_name(k)}


def secrets_pipe() -> tuple[int, int]:
    """A pipe for handing secrets over: the read end goes to the engine (pass_fds), the write
    end stays here (not inheritable, so no other child of the server holds it open)."""
    return os.pipe()


def hand_over(write_fd: int, secrets: Mapping[str, str]) -> None:
    """Writes the secrets as JSON to the engine's pipe and closes it; an engine that ended first
    (a broken pipe) says why in its log."""
    data = json.dumps(dict(secrets)).encode()
    try:
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)
    except BrokenPipeError:
        pass
