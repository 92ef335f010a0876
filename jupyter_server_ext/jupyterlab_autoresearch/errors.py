"""What can go wrong with engines and runs, as the domain sees it; `web_errors.py` maps each kind to
its HTTP status in one table, so nothing below the handlers knows of HTTP."""

from __future__ import annotations


class DomainError(Exception):
    """A refusal or failure with a one-line message for the user and, for a bad input, its field."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


class BadRequest(DomainError):
    """What was asked cannot be done with these inputs (the engine refused them: a dirty tree, a used tag…)."""


class NotFound(DomainError):
    """The run, experiment log or folder asked for does not exist."""


class NoEngine(DomainError):
    """No engine runs on the workspace (a stop with nothing to stop)."""


class Conflict(DomainError):
    """What was asked does not fit the run as it stands now (no engine on it, no proposal awaiting that decision)."""


class EngineRunning(DomainError):
    """An engine already holds the workspace: it must stop before another starts."""


class FileInTheWay(DomainError):
    """A file of the run is not what the server may read or write (a symlink or FIFO left there)."""


class Unavailable(DomainError):
    """This installation cannot run the engine: no usable Node.js, no bundle, no option list."""


class EngineFailed(DomainError):
    """The engine crashed, could not be started, or did not finish in time."""


class StateUnreadable(DomainError):
    """A run's state.json cannot be had (nor rewritten from its journal): the message names the file, the problem and the fix."""
