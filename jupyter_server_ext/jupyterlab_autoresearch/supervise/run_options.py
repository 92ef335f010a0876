"""The run options of `autoresearch run` that the server takes or passes, as src/core/config/run-options.ts
declares them: the build writes them to engine/run-options.json beside the engine bundle (this
side cannot import TypeScript), so a new option reaches the server without an edit here."""

from __future__ import annotations

import functools

from ..generated import generated
from ..node import ENGINE_DIR

OPTIONS_FILE = ENGINE_DIR / "run-options.json"


class MissingOptions(RuntimeError):
    """engine/run-options.json is missing or unreadable: the package was not built."""


def _declared(part: str, what: str):
    """One part of engine/run-options.json; MissingOptions when the build's file lacks it."""
    try:
        return generated("run-options.json")[part]
    except (RuntimeError, KeyError) as err:
        raise MissingOptions(
            f"the engine's {what} in {OPTIONS_FILE} is missing or broken ({err}); this installation is broken"
        ) from None


@functools.cache
def run_options() -> tuple[dict, ...]:
    """Each option: key (the JSON field), flag (the engine's), kind, server ('body' or 'server'), choices."""
    return tuple(_declared("options", "option list"))


def engine_flags(opts: dict) -> list[str]:
    """`--flag value` for each option set in opts; a switch is its bare flag when it differs from the default."""
    flags: list[str] = []
    for option in run_options():
        value = opts.get(option["key"])
        if value is None:
            continue
        if option["kind"] == "switch":
            # A switch's flag says it differs from its default: --resume is off unless given,
            # --no-pipeline turns off what is on.
            on_by_default = option["flag"].startswith("--no-")
            if value != on_by_default:
                flags.append(option["flag"])
        else:
            flags += [option["flag"], str(value)]
    return flags


@functools.cache
def proposers() -> dict[str, dict]:
    """Each proposer the engine has, by name: label, description, has_model, needs_key, key_env
    (the environment variables holding its credentials) and options (src/core/config/run-options.ts's
    PROPOSER_INFO, which the build writes beside the options)."""
    return dict(_declared("proposers", "proposer list"))


def secret_env() -> tuple[str, ...]:
    """The environment variables that hold some proposer's credentials: never relayed to a client."""
    return tuple(dict.fromkeys(name for info in proposers().values() for name in info.get("key_env", [])))
