"""Checks against the engine's own zod schemas, which the build writes as JSON Schema (draft-07)
beside the engine bundle (src/core/journal/json-schemas.ts → engine/*.schema.json): the server, load()
and watch() accept exactly what the engine accepts, from one source, with no hand-kept copy.

fastjsonschema compiles a schema to Python code once per process, so a journal line costs about
what the hand-kept checks it replaced did (14-16 µs against 13-14 µs, json.loads included). Three things zod does that JSON Schema does
not say are added here, as rules of JSON numbers, not per field:
- a number is a finite double: NaN, Infinity and 1e999 are refused (JSON.parse makes 1e999
  Infinity, which z.number() refuses; json.loads would take all three), and so is an integer
  literal too long for a double (a Python int, but Infinity to JavaScript);
- an integral float (`3.0`) counts as an integer, as JSON.parse reads it as 3 and z.int()
  takes it; fastjsonschema agrees, and the value is made an int where the schema says integer
  (`n: 3.0` names log 0003.log);
- wording: a refusal names the field, what it holds and what the schema expects (schema_words.py)."""

from __future__ import annotations

import math
from collections.abc import Callable

import fastjsonschema

from ..errors import Unavailable
from ..generated import generated
from ..node import ENGINE_DIR

# z.number().int() is a safe integer: the schemas bound integers by it.
SAFE_INT = 2**53 - 1
# The least magnitude JavaScript reads as Infinity: halfway between the largest double and 2^1024
# rounds up (to even). Below it, a literal is a finite double to JSON.parse and float() alike.
PAST_DOUBLE = 2**1024 - 2**970


class SchemaMissing(Unavailable):
    """A schema file is not beside the engine bundle: a checkout that never built the engine."""


class NotFinite(ValueError):
    """A number JSON cannot carry (NaN, Infinity) or that overflows a double (1e999)."""

    def __init__(self, text: str):
        self.text = text[:40]
        super().__init__(f"the number {self.text} is not finite")


def finite(text: str) -> float:
    """json's parse_float: a double, refused when not finite."""
    value = float(text)
    if not math.isfinite(value):
        raise NotFinite(text)
    return value


def no_constant(name: str):
    """json's parse_constant: NaN, Infinity and -Infinity are no JSON."""
    raise NotFinite(name)


# What json.loads needs to read numbers as JSON.parse and zod do.
JSON_NUMBERS = {"parse_float": finite, "parse_constant": no_constant}


def load_schema(name: str) -> dict:
    """A schema file the build wrote; SchemaMissing, naming the fix, when it is absent or broken."""
    try:
        return generated(name)
    except RuntimeError:
        raise SchemaMissing(
            f"the engine's schema {ENGINE_DIR / name} is missing or unreadable, so no journal "
            "or state.json can be checked: in a source checkout run `npm run build:engine`, else reinstall "
            "jupyterlab-autoresearch"
        ) from None


def with_double_range(node):
    """The schema with every number bounded to a double's range (see PAST_DOUBLE)."""
    if isinstance(node, list):
        return [with_double_range(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: with_double_range(v) for k, v in node.items()}
    types = node.get("type")
    if types == "number" or (isinstance(types, list) and "number" in types):
        out.setdefault("exclusiveMaximum", PAST_DOUBLE)
        out.setdefault("exclusiveMinimum", -PAST_DOUBLE)
    return out


def compile_schema(schema: dict, root: dict) -> Callable:
    """A validator of `schema` (a part of `root`, whose definitions it may refer to)."""
    shared = {k: root[k] for k in ("$schema", "definitions", "$defs") if k in root}
    return fastjsonschema.compile(with_double_range({**shared, **schema}))


# --- Integral floats where the schema says integer ------------------------------------------
# A plan says where the integers are: True for an integer, else {"props": {key: plan},
# "items": plan, "values": plan} for an object's fields, an array's items, a record's values.


def _resolve(node: dict, root: dict) -> dict | None:
    ref = node.get("$ref", "")
    if not ref.startswith("#/"):
        return None
    for part in ref[2:].split("/"):
        root = root.get(part) if isinstance(root, dict) else None
    return root if isinstance(root, dict) else None


def int_plan(node, root: dict, seen: frozenset = frozenset()):
    """Where `node` has integers, as a plan (None: nowhere)."""
    if not isinstance(node, dict):
        return None
    if "$ref" in node:
        if node["$ref"] in seen:
            return None
        return int_plan(_resolve(node, root), root, seen | {node["$ref"]})
    types = node.get("type")
    if types == "integer" or (isinstance(types, list) and "integer" in types):
        return True
    plan: dict = {}
    props = {k: p for k, s in (node.get("properties") or {}).items() if (p := int_plan(s, root, seen)) is not None}
    if props:
        plan["props"] = props
    for key, part in (("items", "items"), ("values", "additionalProperties")):
        if (p := int_plan(node.get(part), root, seen)) is not None:
            plan[key] = p
    for branch in (node.get("anyOf") or []) + (node.get("oneOf") or []) + (node.get("allOf") or []):
        plan = _merge(plan, int_plan(branch, root, seen))
        if plan is True:
            return True
    return plan or None


def _merge(a, b):
    if a is True or b is True:
        return True
    if not b:
        return a
    out = dict(a)
    props = {**a.get("props", {})}
    for k, p in b.get("props", {}).items():
        props[k] = _merge(props.get(k, {}), p)
    if props:
        out["props"] = props
    for key in ("items", "values"):
        if key in b:
            out[key] = _merge(a.get(key, {}), b[key])
    return out


def whole_numbers(value, plan):
    """`value` with its integral floats made ints where `plan` says integer (in place for containers)."""
    if plan is True:
        return int(value) if type(value) is float and value.is_integer() else value
    if not plan:
        return value  # no integer in there (a record type without integer fields has no plan)
    if isinstance(value, dict):
        for key, sub in plan.get("props", {}).items():
            if key in value:
                value[key] = whole_numbers(value[key], sub)
        if "values" in plan:
            for key in value:
                value[key] = whole_numbers(value[key], plan["values"])
    elif isinstance(value, list) and "items" in plan:
        value[:] = [whole_numbers(v, plan["items"]) for v in value]
    return value
