"""Jupyter server configuration for the Galata tests: token-less, on 127.0.0.1, in a temp root.

Never use it for anything else: it turns off the server's security (no token, no XSRF check).
"""

import os

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821 (c is the config object Jupyter passes in)

c.ServerApp.ip = "127.0.0.1"  # noqa: F821
c.ServerApp.port = int(os.environ.get("GALATA_PORT", "8898"))  # noqa: F821
# Only errors: the tests' output should be the tests'.
c.ServerApp.log_level = "ERROR"  # noqa: F821
