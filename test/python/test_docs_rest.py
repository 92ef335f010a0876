"""docs/rest-api.md's route list is the server's route table, as scripts/docs_rest.py writes it."""

import importlib.util
import subprocess
import sys

from conftest import ROOT
from jupyterlab_autoresearch.routes.handlers import StatusHandler


def docs_rest():
    """scripts/docs_rest.py as a module (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location("docs_rest", ROOT / "scripts" / "docs_rest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rest_api_doc_is_what_the_generator_writes_now():
    """Fails when a route, a handler's methods or its docstring changed and the doc was not rewritten."""
    current, wanted = docs_rest().render()
    assert current == wanted, "docs/rest-api.md is stale against the route table: run python scripts/docs_rest.py"


def test_every_route_the_server_serves_is_listed_with_its_methods():
    gen = docs_rest()
    listed = gen.generated()
    paths = [path for path, _ in gen.routes()]
    assert {"status", "runs", "runs/stop", "review", "compare", "events"} <= set(paths)
    for path, cls in gen.routes():
        assert f"`/autoresearch/{path}`\n" in listed
        assert gen.methods(cls), f"{cls.__name__} answers nothing"
    assert gen.methods(StatusHandler) == ["GET"]
    assert "### `WS` `/autoresearch/events`" in listed


def test_the_check_fails_on_a_changed_docstring(monkeypatch):
    """The check can fail: a handler's docstring that changed makes the committed doc stale."""
    monkeypatch.setattr(StatusHandler, "__doc__", "`GET`: something else.")
    current, wanted = docs_rest().render()
    assert current != wanted and "`GET`: something else." in wanted


def test_the_check_command_says_what_to_run():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs_rest.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
