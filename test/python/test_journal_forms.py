"""read_journal_at's derived forms (the event stream's light replay): each record is lightened and
encoded once, not once per subscriber, kept up with what is appended, and dropped with the file
when it is replaced."""

import json
import os

from test_noise_journal import noisy_records, write_journal

from jupyterlab_autoresearch.read.follower import LIGHT_FORM, Row, lighten
from jupyterlab_autoresearch.read.journal import Form, read_journal_at


def counting(form: Form):
    """The form, with each record it makes noted."""
    calls: list[int] = []

    def counted(record: dict) -> dict:
        calls.append(record.get("n", -1))
        return form.make(record)

    return Form(counted, form.encode), calls


def decoded(row: Row) -> dict:
    """A row as the record it encodes (src/core/journal/light-record.ts recordsFromRows)."""
    return {"type": row.shape[0], **dict(zip(row.shape[1:], json.loads(row.values), strict=True))}


def test_a_form_is_made_once_per_record_and_follows_appends(tmp_path):
    records = noisy_records()
    journal = write_journal(tmp_path, records)
    light, calls = counting(LIGHT_FORM)
    for _ in range(3):  # three subscribers
        derived, rows, at = read_journal_at(journal, None, light)
        assert derived == [lighten(r) for r in records]
        assert [decoded(row) for row in rows] == derived
        assert at.lines == len(records)
    assert len(calls) == len(records), "a later subscriber lightened the journal again"
    # Compact: a long run's replay is megabytes.
    assert all(row.values == json.dumps(json.loads(row.values), separators=(",", ":")).encode() for row in rows)

    later = {**records[-3], "n": 9, "ts": "2026-01-02T00:00:00Z"}
    with journal.open("a") as f:
        f.write(json.dumps(later) + "\n")
    derived, rows, at = read_journal_at(journal, None, light)
    assert len(calls) == len(records) + 1, "only the appended record is lightened"
    assert derived[-1] == lighten(later) and decoded(rows[-1]) == lighten(later)
    assert at.lines == len(records) + 1
    # The records themselves, with their lines as read, are untouched by a form.
    whole, raw, _ = read_journal_at(journal)
    assert whole[-1] == later and json.loads(raw[-1]) == later


def test_a_replaced_journal_drops_its_forms(tmp_path):
    records = noisy_records()
    journal = write_journal(tmp_path, records)
    light, calls = counting(LIGHT_FORM)
    read_journal_at(journal, None, light)
    fresh = tmp_path / "fresh.jsonl"
    fresh.write_text(json.dumps(records[0]) + "\n")
    os.replace(fresh, journal)  # another file under the same name: nothing of the old one is sent
    derived, rows, at = read_journal_at(journal, None, light)
    assert derived == [lighten(records[0])] and len(rows) == 1 and at.lines == 1
    assert len(calls) == len(records) + 1


def test_a_light_experiment_keeps_its_research_notes_and_nothing_else_of_its_meta(tmp_path):
    """The panel's notes section reads the notes from the light replay (src/lab/panel/notes-section.ts)."""
    records = [r for r in noisy_records() if r["type"] == "experiment"]
    notes = {"text": "## Findings\n- a finding", "through": 1}
    with_notes = {
        **records[-1],
        "proposal_meta": {"reasoning": "long", "lesson": {"about": 1, "text": "t"}, "notes": notes},
    }
    light = lighten(with_notes)
    assert light["proposal_meta"] == {"notes": notes} and light["light"] is True
    assert decoded(LIGHT_FORM.encode(light))["proposal_meta"] == {"notes": notes}
    # Without notes (or with a meta that is no object) a light record has no meta at all.
    assert "proposal_meta" not in lighten({**records[-1], "proposal_meta": {"reasoning": "long"}})
    assert "proposal_meta" not in lighten({**records[-1], "proposal_meta": ["notes"]})
