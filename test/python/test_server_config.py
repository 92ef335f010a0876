"""The server extension's settings (server_config.py) on a real jupyter server: from its config
files and its command line to the supervisor and the event stream, a refused value's message, the
help that lists them and the page written from them."""

import importlib.util
import json
import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError
from traitlets import TraitError
from traitlets.config import Config

from jupyterlab_autoresearch.server_config import ENVIRONMENT, Autoresearch

ROOT = Path(__file__).resolve().parents[2]
SERVER = {"ServerApp": {"jpserver_extensions": {"jupyterlab_autoresearch": True}}}
SETTINGS = ["clone_timeout_s", "log_backlog_bytes", "poll_interval_s", "start_wait_s", "stop_grace_s"]


def applied(app) -> dict:
    """What the extension made of its settings: the supervisor's timers and the event stream's settings."""
    settings = app.web_app.settings
    sup = settings["autoresearch_supervisor"]
    return {
        "stop_grace_s": sup.stop_grace_s,
        "start_wait_s": sup.start_wait_s,
        "clone_timeout_s": sup.clone_timeout_s,
        "poll_ms": settings["autoresearch_poll_ms"],
        "log_backlog_bytes": settings["autoresearch_log_backlog_bytes"],
    }


def test_the_settings_are_the_ones_documented_here():
    assert sorted(Autoresearch.class_traits(config=True)) == SETTINGS


def test_without_settings_the_extension_runs_on_the_defaults(jp_serverapp):
    assert applied(jp_serverapp) == {
        "stop_grace_s": 20.0,
        "start_wait_s": 2.0,
        "clone_timeout_s": 600.0,
        "poll_ms": 500,
        "log_backlog_bytes": 64 * 1024,
    }


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            **SERVER,
            "Autoresearch": {
                "stop_grace_s": 45,
                "start_wait_s": 0.5,
                "clone_timeout_s": 1800,
                "poll_interval_s": 0.25,
                "log_backlog_bytes": 4096,
            },
        }
    ],
)
def test_every_setting_reaches_the_supervisor_and_the_event_stream(jp_serverapp):
    assert applied(jp_serverapp) == {
        "stop_grace_s": 45.0,
        "start_wait_s": 0.5,
        "clone_timeout_s": 1800.0,
        "poll_ms": 250,
        "log_backlog_bytes": 4096,
    }


@pytest.mark.parametrize("jp_argv", [["--Autoresearch.stop_grace_s=5", "--Autoresearch.log_backlog_bytes=1024"]])
@pytest.mark.parametrize("jp_server_config", [{**SERVER, "Autoresearch": {"stop_grace_s": 30}}])
def test_the_command_line_sets_them_over_the_config(jp_serverapp):
    got = applied(jp_serverapp)
    assert (got["stop_grace_s"], got["log_backlog_bytes"], got["start_wait_s"]) == (5.0, 1024, 2.0)


def test_the_config_files_set_them(jp_config_dir, jp_configurable_serverapp):
    # Where an administrator writes them: jupyter_server_config.py and .json in a config directory.
    (jp_config_dir / "jupyter_server_config.py").write_text("c.Autoresearch.poll_interval_s = 2\n")
    (jp_config_dir / "jupyter_server_config.json").write_text(json.dumps({"Autoresearch": {"start_wait_s": 7.5}}))
    got = applied(jp_configurable_serverapp())
    assert (got["poll_ms"], got["start_wait_s"]) == (2000, 7.5)


@pytest.mark.parametrize("jp_argv", [["--Autoresearch.stop_grace_s=-1"]])
async def test_a_refused_value_fails_the_extension_with_a_message_naming_the_setting(capfd, jp_serverapp, jp_fetch):
    # The server runs on (as for any extension that fails to load), without the autoresearch routes.
    assert "autoresearch_supervisor" not in jp_serverapp.web_app.settings
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("autoresearch", "status")
    assert refused.value.code == 404
    # Said in the server's log while it started, where whoever runs it looks.
    logged = " ".join(capfd.readouterr().err.split())
    assert "Autoresearch.stop_grace_s = -1.0 is refused: it must be a number of seconds, at least 0." in logged
    assert "c.Autoresearch.stop_grace_s in jupyter_server_config.py" in logged
    assert '{"Autoresearch": {"stop_grace_s": …}} in jupyter_server_config.json' in logged
    assert "--Autoresearch.stop_grace_s=… on the command line" in logged
    assert "remove it for the default, 20.0" in logged


def test_a_value_that_is_no_number_stops_a_server_told_to_fail_on_extension_failures(capfd, jp_configurable_serverapp):
    config = {
        "ServerApp": {**SERVER["ServerApp"], "reraise_server_extension_failures": True},
        "Autoresearch": {"start_wait_s": "soon"},
    }
    # As jupyter_server does with its own bad config: one line saying why, and exit 1.
    with pytest.raises(SystemExit) as exited:
        jp_configurable_serverapp(config=config)
    assert exited.value.code == 1
    said = " ".join(capfd.readouterr().err.split())
    assert "Bad config encountered during initialization: Autoresearch.start_wait_s = 'soon' is refused: " in said


@pytest.mark.parametrize(
    ("name", "value", "takes"),
    [
        ("stop_grace_s", -0.5, "a number of seconds, at least 0"),
        ("stop_grace_s", math.nan, "a number of seconds, at least 0"),
        ("stop_grace_s", math.inf, "a number of seconds, at least 0"),
        ("start_wait_s", True, "a number of seconds, at least 0"),
        ("start_wait_s", None, "a number of seconds, at least 0"),
        ("clone_timeout_s", 0, "a number of seconds, at least 1"),
        ("poll_interval_s", 0, "a number of seconds, at least 0.05"),
        ("log_backlog_bytes", -1, "a whole number of bytes from 0 to 16777216"),
        ("log_backlog_bytes", 17 * 1024 * 1024, "a whole number of bytes from 0 to 16777216"),
        ("log_backlog_bytes", 1.5, "a whole number of bytes from 0 to 16777216"),
        ("log_backlog_bytes", "64k", "a whole number of bytes from 0 to 16777216"),
    ],
)
def test_each_setting_refuses_what_it_cannot_mean(name, value, takes):
    with pytest.raises(TraitError, match=rf"^Autoresearch\.{name} = .* is refused: it must be {takes}\. Fix it"):
        Autoresearch(config=Config({"Autoresearch": {name: value}}))


def test_the_edges_of_each_range_are_taken():
    edges = {
        "stop_grace_s": 0,
        "start_wait_s": 0,
        "clone_timeout_s": 1,
        "poll_interval_s": 0.05,
        "log_backlog_bytes": 0,
    }
    settings = Autoresearch(config=Config({"Autoresearch": edges}))
    assert {name: getattr(settings, name) for name in edges} == edges
    assert Autoresearch(config=Config({"Autoresearch": {"log_backlog_bytes": 16 * 1024 * 1024}})).log_backlog_bytes


def test_a_misspelt_setting_is_warned_about_with_the_right_name(caplog):
    with caplog.at_level(logging.WARNING):
        Autoresearch(config=Config({"Autoresearch": {"stop_grace": 5}}))
    assert "Did you mean `stop_grace_s`?" in caplog.text


def run_python(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "jupyter_server_ext")}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120, check=True)


def test_the_help_command_lists_every_setting_with_its_help_and_default():
    out = run_python("-m", "jupyterlab_autoresearch.server_config_help").stdout
    for name, trait in Autoresearch.class_traits(config=True).items():
        assert f"--Autoresearch.{name}=<" in out
        assert " ".join(trait.help.split()[:6]) in " ".join(out.split())
    assert "Default: 20.0" in out and "c.Autoresearch.stop_grace_s = 30.0" in out


def test_jupyter_server_help_all_still_cannot_list_an_extension():
    # Why server_config_help exists (docs/server-config.md says so): `jupyter server --help-all`
    # prints before the server looks for extensions. When this fails, jupyter_server lists
    # them itself: say so in the page, and this command may go.
    out = run_python("-m", "jupyter_server", "--help-all").stdout
    assert "ServerApp(JupyterApp) options" in out
    assert "Autoresearch" not in out


def load_docs_script():
    spec = importlib.util.spec_from_file_location("server_config_docs", ROOT / "scripts" / "server_config_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_server_config_page_is_written_from_the_settings():
    page = (ROOT / "docs" / "server-config.md").read_text()
    assert page == load_docs_script().render(), (
        "docs/server-config.md is stale: run python scripts/server_config_docs.py"
    )
    for name in SETTINGS:
        assert f"### `Autoresearch.{name}`" in page


def test_each_environment_variable_the_page_names_is_read_somewhere():
    sources = [
        *ROOT.glob("src/**/*.ts"),
        *ROOT.glob("src/**/*.py"),
        *ROOT.glob("jupyter_server_ext/jupyterlab_autoresearch/**/*.py"),
        *ROOT.glob("templates/**/*.py"),
    ]
    text = "\n".join(p.read_text() for p in sources if p.name != "server_config.py")
    for names, _reader, _what in ENVIRONMENT:
        for name in names.split(", "):
            assert name in text, f"{name} is documented but nothing reads it"


@pytest.mark.parametrize("jp_server_config", [{**SERVER, "Autoresearch": {"log_backlog_bytes": 20}}])
async def test_a_new_subscriber_gets_the_configured_backlog_of_the_live_log(workspace, supervisor, jp_ws_fetch):
    from conftest import wait_for

    run = workspace / ".autoresearch" / "t"
    (run / "logs").mkdir(parents=True)
    start = {
        "type": "experiment_start",
        "ts": "2026-01-01T00:00:00Z",
        "n": 0,
        "parent_commit": "abc1234",
        "description": "d",
    }
    (run / "journal.jsonl").write_text(json.dumps(start) + "\n")
    (run / "logs" / "0000.log").write_text("".join(f"line {i:02}\n" for i in range(50)))  # 400 bytes
    socket = await jp_ws_fetch("autoresearch", "events", params={"path": "ws", "tag": "t"})

    async def next_log():
        message = json.loads(await socket.read_message())
        return message if message["type"] == "log" else None

    log = await wait_for(next_log, timeout=30, what="the live log")
    socket.close()
    # The last 20 bytes, not the default 64 KiB that would hold all 50 lines.
    assert log["lines"][-1] == "line 49" and "line 00" not in log["lines"]
    assert len("\n".join(log["lines"]).encode()) <= 20
