"""Every route refuses a request without the token, on a server with Jupyter's default settings.

Under the default `allow_unauthenticated_access: True`, jupyter_server runs a handler that lacks
its auth decorator for anyone; and a POST without the XSRF cookie and header fails the XSRF
check whatever the decorators. So these requests carry a matching XSRF cookie and header, and
only `@tornado.web.authenticated` / `@ws_authenticated` stand between them and the handler:
deleting either from any route fails a test here.
"""

import json
from pathlib import Path

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.web import RequestHandler
from tornado.websocket import websocket_connect

ROUTES = [
    ("GET", "status"),
    ("GET", "workspaces"),
    ("POST", "workspaces"),
    ("GET", "runs"),
    ("POST", "runs"),
    ("POST", "runs/stop"),
    ("POST", "runs/resume"),
    ("GET", "runs/status"),
    ("POST", "runs/step"),
    ("GET", "review"),
    ("POST", "review"),
    ("GET", "transfer"),
    ("POST", "transfer"),
    ("GET", "experiments"),
    ("GET", "log"),
    ("GET", "compare"),
    ("POST", "export"),
    ("WS", "events"),
]

# Any value will do, so long as the cookie and the header agree (tornado compares the two).
XSRF = "0123456789abcdef0123456789abcdef"
XSRF_HEADERS = {"Cookie": f"_xsrf={XSRF}", "X-XSRFToken": XSRF}


@pytest.fixture
def jp_server_config():
    """Jupyter's defaults: unauthenticated access is allowed where a handler does not forbid it."""
    return {"ServerApp": {"jpserver_extensions": {"jupyterlab_autoresearch": True}}}


def test_the_server_runs_with_the_default_setting(jp_serverapp):
    assert jp_serverapp.allow_unauthenticated_access is True


def test_every_route_of_the_extension_is_in_the_list(jp_serverapp, jp_base_url):
    """A new route (or method) without an entry in ROUTES fails here, so none goes untested."""
    prefix = f"{jp_base_url}autoresearch/"
    found = set()
    app = jp_serverapp.web_app
    for rule in [*app.default_router.rules, *app.wildcard_router.rules]:
        for inner in getattr(rule.target, "rules", [rule]):
            pattern = getattr(inner.matcher, "regex", None)
            if pattern is None or not pattern.pattern.startswith(prefix):
                continue
            name = pattern.pattern[len(prefix) :].rstrip("$")
            cls = inner.target
            for method in ("get", "post", "put", "patch", "delete"):
                if getattr(cls, method) is not getattr(RequestHandler, method):
                    websocket = method == "get" and hasattr(cls, "write_message")
                    found.add(("WS" if websocket else method.upper(), name))
    assert found == set(ROUTES)


@pytest.mark.parametrize("method,route", ROUTES)
async def test_every_route_refuses_a_request_without_the_token(
    method, route, jp_http_port, jp_base_url, jp_root_dir, workspace, supervisor, api
):
    params = "path=ws&tag=t&n=0"
    url = f"localhost:{jp_http_port}{jp_base_url}autoresearch/{route}?{params}"
    body = {"workspaces": {"path": "made"}, "runs": {"path": "ws", "proposer": "offline"}}.get(route, {"path": "ws"})
    with pytest.raises(HTTPClientError) as refused:
        if method == "WS":
            await websocket_connect(HTTPRequest(f"ws://{url}", headers=XSRF_HEADERS))
        else:
            request = HTTPRequest(
                f"http://{url}",
                method=method,
                body=json.dumps(body) if method == "POST" else None,
                headers={**XSRF_HEADERS, "Content-Type": "application/json"},
                follow_redirects=False,
            )
            await AsyncHTTPClient().fetch(request)
    assert refused.value.code == 403
    if method != "WS":
        # Refused for want of a user, not by the XSRF check this request passes.
        reply = json.loads(refused.value.response.body)
        assert "xsrf" not in json.dumps(reply).lower(), reply

    # Nothing happened: no engine, no run, no new folder.
    assert not (workspace / ".autoresearch").exists()
    assert not (Path(jp_root_dir) / "made").exists()
    assert not supervisor.children
    code, runs = await api("runs", path="ws")
    assert (code, runs["runs"], runs["engine"]) == (200, [], None)


async def test_a_failed_xsrf_check_says_so(jp_http_port, jp_base_url, workspace, supervisor, api):
    """The control: with a cookie and header that disagree, the 403 names XSRF, so the 403s above,
    which do not, come from the auth decorators and not from the XSRF check."""
    request = HTTPRequest(
        f"http://localhost:{jp_http_port}{jp_base_url}autoresearch/runs/stop",
        method="POST",
        body=json.dumps({"path": "ws"}),
        headers={**XSRF_HEADERS, "X-XSRFToken": "another", "Content-Type": "application/json"},
    )
    with pytest.raises(HTTPClientError) as refused:
        await AsyncHTTPClient().fetch(request)
    assert refused.value.code == 403
    assert "xsrf" in refused.value.response.body.decode().lower()
