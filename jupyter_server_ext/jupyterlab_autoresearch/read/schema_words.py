"""Refusals of the engine's JSON Schemas in words: the field, what it holds and what the schema
expects (`experiment.n is string "x", expected integer`), for messages that name a journal
line or a state.json, rather than fastjsonschema's own ("data.n must be integer")."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import fastjsonschema

from .schema_check import PAST_DOUBLE, SAFE_INT, with_double_range


def shown(value) -> str:
    """A value as JSON, cut short: user text may be long."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def json_type(value) -> str:
    """A value's JSON type (bool is no integer here, an integral float is one)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer" if abs(value) <= SAFE_INT else "number"  # not a safe integer
    return {float: "number", str: "string", dict: "object", list: "array"}.get(type(value), type(value).__name__)


def expected(node: dict) -> str:
    """What a part of a schema takes, in a few words."""
    if "enum" in node:
        return f"one of {sorted(node['enum'], key=str)}"
    if "const" in node:
        return json.dumps(node["const"])
    if "anyOf" in node or "oneOf" in node:
        return " or ".join(dict.fromkeys(expected(b) for b in node.get("anyOf") or node["oneOf"]))
    types = node.get("type")
    if types is None:
        return "any value"
    words = " or ".join(types) if isinstance(types, list) else types
    if "pattern" in node:
        words += f" matching {node['pattern']}"
    return words


def _clip(text: str, size: int = 80) -> str:
    return text if len(text) <= size else text[:size] + "…"


def _bound(where: str, value, rule: str, limit) -> str:
    if abs(limit) in (PAST_DOUBLE, SAFE_INT) and rule in ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"):
        if abs(limit) == PAST_DOUBLE:
            return f"{where} is {shown(value)}, too large for a number (JavaScript reads it as Infinity)"
        return f"{where} is {shown(value)}, expected a safe integer (at most 2^53 - 1 either side of 0)"
    words = {
        "minimum": f"{limit} or more",
        "maximum": f"{limit} or less",
        "exclusiveMinimum": f"more than {limit}",
        "exclusiveMaximum": f"less than {limit}",
    }[rule]
    return f"{where} is {shown(value)}, expected {words}"


def _takes(node: dict, value) -> bool:
    types = node.get("type")
    types = [types] if isinstance(types, str) else types or []
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    got = "integer" if whole and not isinstance(value, bool) else json_type(value)  # safe or not
    return got in types or (got == "integer" and "number" in types)


@functools.lru_cache(maxsize=64)
def _branch_check(branch: str) -> Callable:
    return fastjsonschema.compile(with_double_range(json.loads(branch)))


def _inner_refusal(err: fastjsonschema.JsonSchemaValueException, record_word: str | None) -> str | None:
    """For a value none of a union's branches takes, what the one branch of its type says
    (`run` is an object, but its `direction` is wrong), rather than "expected object or null"."""
    branches = [
        b for b in (err.definition or {}).get("anyOf") or err.definition.get("oneOf") or [] if _takes(b, err.value)
    ]
    if len(branches) != 1:
        return None
    try:
        _branch_check(json.dumps(branches[0], sort_keys=True))(err.value, name_prefix=err.name)
    except fastjsonschema.JsonSchemaValueException as inner:
        return describe(inner, record_word)
    return None


def describe(err: fastjsonschema.JsonSchemaValueException, record_word: str | None = None) -> str:
    """A refusal in words: the field (as its validator's name_prefix and path name it), what it
    holds and what the schema expects. `record_word`: how the whole value is called ("run record")."""
    where, value, rule, node = _clip(err.name or "the value"), err.value, err.rule, err.definition or {}
    top = record_word if record_word is not None and "." not in where and "[" not in where else where
    if rule == "required":
        have = value.keys() if isinstance(value, dict) else ()
        missing = [k for k in node.get("required", ()) if k not in have]
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return f"{top} lacks {_clip(missing[0], 40)!r}{more}" if missing else f"{top} lacks a field"
    if rule in ("anyOf", "oneOf") and (inner := _inner_refusal(err, record_word)) is not None:
        return inner
    if rule in ("type", "anyOf", "oneOf"):
        wanted = " or ".join(node["type"]) if rule == "type" and isinstance(node["type"], list) else None
        wanted = wanted or (node["type"] if rule == "type" else expected(node))
        return f"{where} is {json_type(value)} {shown(value)}, expected {wanted}"
    if rule == "enum":
        got = repr(_clip(value, 40)) if isinstance(value, str) else shown(value)
        return f"{where} {got} is not one of {sorted(node['enum'], key=str)}"
    if rule in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return _bound(where, value, rule, node[rule])
    if rule == "pattern":
        return f"{where} is {shown(value)}, expected a string matching {node['pattern']}"
    if rule == "minLength":
        return f"{where} is empty" if value == "" else f"{where} is shorter than {node['minLength']} characters"
    if rule == "minItems":
        return f"{where} has fewer than {node['minItems']} items"
    if rule == "const":
        return f"{where} is {shown(value)}, expected {json.dumps(node['const'])}"
    if rule == "additionalProperties" and isinstance(value, dict):
        extra = sorted(set(value) - set(node.get("properties") or {}))
        return f"{where} has a field it may not have: {_clip(extra[0], 40)!r}" if extra else err.message
    return _clip(err.message, 200)
