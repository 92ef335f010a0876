"""JupyterLab autoresearch: the Jupyter server extension and the `autoresearch` command.

The server extension answers the front end's REST calls; the experiment loop itself runs in
a Node.js engine process (the bundled `engine/autoresearch.cjs`).
"""

from .node import find_node

# For notebooks: `from jupyterlab_autoresearch import load, show, watch` (and load_transfer). Light to import:
# pandas and IPython are imported only when called.
from .notebooks.notebook import load, show
from .notebooks.transfer import load_transfer
from .notebooks.watch import watch
from .routes.handlers import setup_route_handlers
from .server_config import Autoresearch
from .supervise.git_check import find_git
from .version import __version__

__all__ = ["__version__", "load", "load_transfer", "show", "watch"]


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "jupyterlab-autoresearch"}]


def _jupyter_server_extension_points():
    return [{"module": "jupyterlab_autoresearch"}]


def _load_jupyter_server_extension(server_app):
    """Registers the autoresearch REST and WebSocket routes on the Jupyter server, tuned by its
    `Autoresearch` settings (server_config.py); a value refused there fails the extension's load
    with a message naming the setting."""
    # The server's config: its files, and `--Autoresearch.*` on its command line.
    settings = Autoresearch(parent=server_app)
    setup_route_handlers(server_app.web_app, server_app.root_dir, server_app.log, settings)
    server_app.log.info("Registered jupyterlab_autoresearch server extension")
    # Said once at start, where whoever runs the server looks: no run can start without both.
    for found in (find_node(), find_git()):
        if not found.ok:
            server_app.log.warning("autoresearch: %s", found.message)
