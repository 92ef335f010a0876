"""The one table from domain errors to HTTP statuses, and refusals as JSON bodies of {message, field}."""

from __future__ import annotations

import functools
import json

from .. import errors
from .validate import ApiError

# Each kind of domain error and the status that fits it; a subclass not listed takes its base's.
HTTP_STATUS: dict[type[errors.DomainError], int] = {
    errors.BadRequest: 400,
    errors.NotFound: 404,
    errors.NoEngine: 404,
    # A conflict with the workspace's state: it holds an engine, or a file is in the way.
    errors.EngineRunning: 409,
    errors.Conflict: 409,
    errors.FileInTheWay: 409,
    errors.StateUnreadable: 409,
    errors.EngineFailed: 500,
    errors.Unavailable: 503,
    errors.DomainError: 500,
}


def api_error(err: errors.DomainError) -> ApiError:
    """The HTTP refusal for a domain error: its status from HTTP_STATUS, its message and field."""
    status = next(HTTP_STATUS[kind] for kind in type(err).__mro__ if kind in HTTP_STATUS)
    return ApiError(status, err.message, err.field)


def answers_domain_errors(method):
    """Turns the domain errors a route's method raises into their HTTP refusals."""

    @functools.wraps(method)
    async def wrapper(self, *args, **kwargs):
        try:
            return await method(self, *args, **kwargs)
        except errors.DomainError as err:
            raise api_error(err) from None

    return wrapper


class JsonErrors:
    """Refusals as JSON bodies of {message, field}, for the REST routes and the WebSocket's upgrade alike."""

    def write_error(self, status_code: int, **kwargs) -> None:
        error = (kwargs.get("exc_info") or (None, None))[1]
        if isinstance(error, ApiError):
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"message": error.message, "field": error.field}))
        else:
            super().write_error(status_code, **kwargs)
