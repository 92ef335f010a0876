import pytest

pytest_plugins = ("pytest_jupyter.jupyter_server",)


@pytest.fixture
def jp_server_config(jp_server_config):
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyterlab_autoresearch": True},
            # Refuse any handler that forgot its auth decorator, as a locked-down server would.
            "allow_unauthenticated_access": False,
        }
    }


@pytest.fixture
def fake_node(tmp_path):
    """Writes an executable that answers `--version` like a Node.js of the given version."""

    def make(version: str) -> str:
        path = tmp_path / f"node-{version}"
        path.write_text(f"#!/bin/sh\necho {version}\n")
        path.chmod(0o755)
        return str(path)

    return make
