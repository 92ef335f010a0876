"""A run cannot switch its sandbox off for later runs through the panel either: POST runs/resume
relays the engine's refusal of security settings a run changed in program.md, and resumes only
with accept_settings, which the engine records; the journal names the panel as the source of
the settings the panel sent. A real server, a real engine, a real workspace."""

from conftest import alive, journal, wait_for


def _starts(ws, tag):
    return [r for r in journal(ws, tag) if r["type"] == "run_start"]


async def _run_to_end(api, body):
    code, started = await api("runs", "POST", body)
    assert code == 202, started
    await wait_for(lambda: not alive(started["pid"]), what="the run to end")
    return started


async def test_front_matter_sandbox_off_written_by_a_run_is_refused_on_resume_until_the_panel_accepts_it(
    workspace, supervisor, api
):
    base = {"path": "ws", "proposer": "offline", "noise_runs": 1}
    await _run_to_end(api, {**base, "tag": "s1", "max_experiments": 0, "keep_sigma": 0})
    first = _starts(workspace, "s1")[0]
    assert first["settings_from"] == {
        "sandbox": "default",
        "network": "default",
        "readonly": "default",
        "editable": "default",
    }

    # What the attack wrote: program.md's front matter with the sandbox off (a run without the sandbox can).
    program = workspace / "program.md"
    program.write_text(program.read_text().replace("budget_s: 1\n", "budget_s: 1\nsandbox: off\n", 1))
    before = (workspace / ".autoresearch" / "s1" / "journal.jsonl").read_text()
    code, refused = await api("runs/resume", "POST", {**base, "more_experiments": 0})
    assert code == 400, refused
    assert refused["message"].startswith("security settings changed since run s1 last started: ")
    assert "sandbox auto → off (from program.md)" in refused["message"]
    assert "--accept-settings" in refused["message"]
    assert (workspace / ".autoresearch" / "s1" / "journal.jsonl").read_text() == before

    code, resumed = await api("runs/resume", "POST", {**base, "more_experiments": 0, "accept_settings": True})
    assert code == 202, resumed
    await wait_for(lambda: not alive(resumed["pid"]), what="the resumed run to end")
    last = _starts(workspace, "s1")[-1]
    assert last["settings_from"]["sandbox"] == "program.md"
    assert last["settings_changed"] == {
        "since": "s1",
        "accepted": True,
        "changes": [{"setting": "sandbox", "before": "auto", "after": "off", "from": "program.md"}],
    }
    # The server reads the run on with the new fields (its schema is the engine's).
    code, status = await api("runs/status", path="ws", tag="s1")
    assert code == 200 and status["state"] == "stopped", status


async def test_a_setting_the_panel_sends_is_recorded_as_the_panels(workspace, supervisor, api):
    await _run_to_end(api, {"path": "ws", "proposer": "offline", "tag": "p1", "max_experiments": 0, "sandbox": "on"})
    assert _starts(workspace, "p1")[0]["settings_from"]["sandbox"] == "panel"
