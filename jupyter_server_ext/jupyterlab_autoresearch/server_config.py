"""The server extension's settings, for whoever runs the Jupyter server: `c.Autoresearch.<name>` in
jupyter_server_config.py, `"Autoresearch": {…}` in jupyter_server_config.json, or
`--Autoresearch.<name>=<value>` on the `jupyter server` (or `jupyter lab`) command line.

`jupyter server --help-all` parses its arguments, prints and exits before the server looks for its
extensions, so no extension's options can appear there: `python -m
jupyterlab_autoresearch.server_config_help` lists these, and docs/server-config.md is written from
them (scripts/server_config_docs.py).
"""

from __future__ import annotations

import math

from traitlets import Float, Int, TraitError
from traitlets.config import LoggingConfigurable

from .read.follower import LOG_BACKLOG


class _Explained:
    """A trait whose refusal of a value names the setting, what it takes and where to fix it,
    rather than traitlets' words about "the trait of an instance"."""

    def validate(self, obj, value):
        # A bool is an int to Python, NaN passes every bound and infinity is no duration: none is a setting.
        if isinstance(value, bool):
            raise TraitError(self.refusal(value))
        try:
            value = super().validate(obj, value)
        except TraitError:
            raise TraitError(self.refusal(value)) from None
        if not math.isfinite(value):
            raise TraitError(self.refusal(value))
        return value

    def refusal(self, value) -> str:
        name = f"Autoresearch.{self.name}"
        return (
            f"{name} = {value!r} is refused: it must be {self.info()}. Fix it where it is set "
            f'(c.{name} in jupyter_server_config.py, {{"Autoresearch": {{"{self.name}": …}}}} in '
            f"jupyter_server_config.json, or --{name}=… on the command line), or remove it for "
            f"the default, {self.default_value!r}."
        )


class Seconds(_Explained, Float):
    """A duration in seconds, at least `min`."""

    def info(self) -> str:
        return f"a number of seconds, at least {self.min:g}"


class ByteCount(_Explained, Int):
    """A whole number of bytes from `min` to `max`."""

    def info(self) -> str:
        return f"a whole number of bytes from {self.min} to {self.max}"


class Autoresearch(LoggingConfigurable):
    """The autoresearch server extension's settings (the engine's own are run options, in the panel
    or on the `autoresearch` command line; see docs/server-config.md for the environment it reads)."""

    stop_grace_s = Seconds(
        20.0,
        min=0,
        help="""How long an engine has, after Stop sends it SIGTERM, to reset to its best commit and
        write its journal's end before it and its training runs get SIGKILL. Raise it where a
        training run takes long to stop (a large checkpoint written on SIGTERM).""",
    ).tag(config=True)

    start_wait_s = Seconds(
        2.0,
        min=0,
        help="""How long a Start (or a transfer study) waits for the engine to pass its checks, so a
        refusal (a dirty tree, a bad program.md, a branch that exists) is the answer to the request
        itself; an engine still checking after it is left to run, and a later refusal shows in the
        run list. Raise it on a slow or busy host.""",
    ).tag(config=True)

    clone_timeout_s = Seconds(
        600.0,
        min=1,
        help="""How long creating a workspace from a repository (New Workspace with a URL) may take
        to clone before it is stopped and refused. Raise it for large histories or slow networks.""",
    ).tag(config=True)

    poll_interval_s = Seconds(
        0.5,
        min=0.05,
        help="""How often each open panel's event stream looks at its run's journal, log and
        state.json for what is new. Lower is livelier; higher costs a shared server less with many
        panels open.""",
    ).tag(config=True)

    log_backlog_bytes = ByteCount(
        LOG_BACKLOG,
        min=0,
        max=16 * 1024 * 1024,
        help="""How much of a training log already written a panel gets when it starts following an
        experiment (its end); what follows streams as it is written. 0 sends only what comes next.""",
    ).tag(config=True)


# Environment variables an administrator may set, read by the server, the `autoresearch` command,
# the engine or a training run as they are (documented beside the settings, never turned into them:
# the engine started from a terminal reads them too, and both must agree).
ENVIRONMENT = (
    (
        "AUTORESEARCH_NODE",
        "the server and the `autoresearch` command",
        "The Node.js to run the engine with (a path or a name on the PATH); when set, the only one tried. "
        "Unset: `node` on the PATH if it is new enough, else the `[node]` extra's.",
    ),
    (
        "ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN",
        "the engine (the `claude` proposer)",
        "The Anthropic credential. The server never puts it in an engine's environment: it goes on a "
        "pipe, and no training run sees it.",
    ),
    (
        "ANTHROPIC_BASE_URL",
        "the engine (the Anthropic SDK)",
        "Another endpoint for the Messages API (a proxy or gateway); held back from training runs like the key.",
    ),
    (
        "AUTORESEARCH_PYTHON",
        "the engine",
        "The Python a run uses when it names none (`--python`); default `python3` on the PATH.",
    ),
    (
        "AUTORESEARCH_CACHE",
        "a training run (the templates' prepare.py)",
        "Where prepared data is cached between runs; default ~/.cache/autoresearch.",
    ),
    (
        "AUTORESEARCH_SHIP_DIR",
        "a remote kernel",
        "Where workspaces shipped to a kernel that cannot see them are kept on its side; "
        "default ~/.autoresearch/workspaces.",
    ),
)
