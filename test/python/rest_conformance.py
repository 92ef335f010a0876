"""The REST responses' JSON Schemas as the build writes them from src/core/api/responses.ts
(engine/rest.schema.json), for the route tests to check a real server's answers against."""

import json

import fastjsonschema
import pytest

from jupyterlab_autoresearch.node import ENGINE_DIR

SCHEMAS = json.loads((ENGINE_DIR / "rest.schema.json").read_text(encoding="utf-8"))


def conforms(name: str, reply) -> None:
    """Fails naming the field when `reply` is not what src/core declares for response `name`."""
    if name == "runs":
        # Each run first, against the one shape its state says, for a failure that names the field.
        for run in reply["runs"]:
            conforms("corrupt_run" if run.get("state") == "corrupt" else "run_summary", run)
    try:
        fastjsonschema.compile(SCHEMAS[name])(reply)
    except fastjsonschema.JsonSchemaValueException as err:
        pytest.fail(f"the {name} response drifted from src/core/api/responses.ts: {err.name} {err.message}\n{reply}")
