"""The rules of src/core this side follows, as the build writes them beside the engine bundle
(scripts/build-engine.mjs): this side cannot import TypeScript, so it reads them instead of
keeping copies that could drift."""

from __future__ import annotations

import functools
import json

from .node import ENGINE_DIR


@functools.cache
def generated(name: str) -> dict:
    """engine/<name> as the build wrote it; RuntimeError naming the fix when it is missing or broken."""
    file = ENGINE_DIR / name
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise RuntimeError(
            f"the engine's {file} is missing or broken ({err}); this installation is broken "
            "(in a checkout: node scripts/build-engine.mjs)"
        ) from None
