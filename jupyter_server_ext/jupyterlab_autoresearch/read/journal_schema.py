"""What a journal record must be: src/core/journal/journal.ts's zod schema itself, as the build writes it
in JSON Schema (engine/journal-record.schema.json), compiled by fastjsonschema (schema_check.py
says what is added to it: numbers read as zod reads them, integral floats as integers, wording).
Enough to refuse a damaged or hostile line before any of it reaches a response.

The schema is a union of one object per record type (zod's discriminatedUnion on `type`): each
branch is compiled on its own and a record goes to the one its `type` names, so a record is
checked once, not against every branch, and its refusal speaks of that branch's fields."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import NamedTuple

from fastjsonschema import JsonSchemaValueException

from .schema_check import NotFinite, SchemaMissing, compile_schema, finite, int_plan, load_schema, no_constant
from .schema_check import whole_numbers as _whole_numbers
from .schema_words import describe
from .schema_words import shown as _shown

SCHEMA_FILE = "journal-record.schema.json"


class _Check(NamedTuple):
    validate: Callable
    # Where the record type has integers (schema_check.int_plan).
    integers: object


def _type_of(branch: dict) -> str | None:
    """The record type a branch of the union is for: its `type` property's constant."""
    prop = (branch.get("properties") or {}).get("type") or {}
    if isinstance(prop.get("const"), str):
        return prop["const"]
    enum = prop.get("enum")
    return enum[0] if isinstance(enum, list) and len(enum) == 1 and isinstance(enum[0], str) else None


@functools.cache
def checks() -> dict[str, _Check]:
    """One compiled validator per record type, made on first use (once per process)."""
    root = load_schema(SCHEMA_FILE)
    branches = root.get("oneOf") or root.get("anyOf") or []
    out: dict[str, _Check] = {}
    for branch in branches:
        kind = _type_of(branch)
        if kind is None:
            raise SchemaMissing(
                f"the engine's {SCHEMA_FILE} has a branch without a constant `type`, not the union of "
                "record types this server reads: rebuild (`npm run build:engine`) or reinstall jupyterlab-autoresearch"
            )
        out[kind] = _Check(compile_schema(branch, root), int_plan(branch, root))
    if not out:
        raise SchemaMissing(f"the engine's {SCHEMA_FILE} names no record type: rebuild or reinstall")
    return out


def problem(record) -> str | None:
    """What is wrong with a parsed journal record, or None when it is valid."""
    if not isinstance(record, dict):
        return "not a JSON object"
    kind = record.get("type")
    by_type = checks()
    check = by_type.get(kind) if isinstance(kind, str) else None
    if check is None:
        if "type" not in record:
            return f"record lacks 'type' (one of {sorted(by_type)})"
        got = repr(kind[:40]) if isinstance(kind, str) else _shown(kind)
        return f"unknown record type {got}, expected one of {sorted(by_type)}"
    try:
        check.validate(record, name_prefix=kind)
    except JsonSchemaValueException as err:
        return describe(err, f"{kind} record")
    return None


class RecordProblem(ValueError):
    """What is wrong with one journal line, in words (JournalTail adds the file and line)."""


class _Reader(threading.local):
    """A JSON decoder per thread (making one per line costs more than the check), noting whether
    the line held an integral float: only then is there an int to make of one."""

    def __init__(self):
        self.integral = False
        self.decode = json.JSONDecoder(parse_float=self._float, parse_constant=no_constant).decode

    def _float(self, text: str) -> float:
        value = finite(text)
        if value.is_integer():
            self.integral = True
        return value


_reader = _Reader()


def parse(raw: bytes) -> dict:
    """A journal line as a valid record (integral floats in integer fields made ints); RecordProblem otherwise."""
    reader = _reader
    reader.integral = False
    try:
        # surrogatepass: what json.loads does with bytes (a lone surrogate is no reason to refuse).
        record = reader.decode(raw.decode("utf-8", "surrogatepass"))
    except NotFinite as err:
        raise RecordProblem(f"holds the number {err.text}, which is not finite") from None
    except RecursionError:
        raise RecordProblem("is nested too deeply to be a journal record") from None
    except ValueError as err:
        raise RecordProblem(f"is not JSON ({str(getattr(err, 'msg', err))[:80]})") from None
    why = problem(record)
    if why is not None:
        raise RecordProblem(f"is not a valid journal record: {why}")
    if reader.integral:
        _whole_numbers(record, checks()[record["type"]].integers)
    return record
