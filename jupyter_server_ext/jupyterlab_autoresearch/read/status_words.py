"""The status words this side reads and serves, as src/core declares them (src/core/api/status-words.ts,
written by the build to engine/rules.json): each word used here is taken from there by name, and a
word src/core no longer declares stops the server at import instead of serving a stale one."""

from __future__ import annotations

from ..generated import generated

WORDS: dict[str, list[str]] = generated("rules.json")["status_words"]


def declared(kind: str, word: str) -> str:
    """`word`, when src/core declares it among `kind`'s words (results, run, served)."""
    if word not in WORDS[kind]:
        raise RuntimeError(
            f"src/core declares no {kind} status {word!r} (it has {', '.join(WORDS[kind])}); "
            "this side was not updated with it"
        )
    return word


# A run's own states (state.json's status), and those the server adds when it serves one.
RUNNING = declared("run", "running")
STOPPED = declared("run", "stopped")
AWAITING_REVIEW = declared("served", "awaiting-review")
DIED = declared("served", "died")
CORRUPT = declared("served", "corrupt")
# The statuses of an experiment that ran, those results.tsv holds.
RESULTS_STATUSES: tuple[str, ...] = tuple(WORDS["results"])
