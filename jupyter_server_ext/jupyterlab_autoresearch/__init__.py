"""JupyterLab autoresearch: the Jupyter server extension and the `autoresearch` command.

The server extension answers the front end's REST calls; the experiment loop itself runs in
a Node.js engine process (the bundled `engine/autoresearch.cjs`).
"""

try:
    from ._version import __version__
except ImportError:  # a source tree that was never built or installed
    import warnings

    warnings.warn("Importing 'jupyterlab_autoresearch' outside a proper installation.", stacklevel=2)
    __version__ = "dev"

from .handlers import setup_route_handlers


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "jupyterlab-autoresearch"}]


def _jupyter_server_extension_points():
    return [{"module": "jupyterlab_autoresearch"}]


def _load_jupyter_server_extension(server_app):
    """Registers the autoresearch REST routes on the Jupyter server."""
    setup_route_handlers(server_app.web_app)
    server_app.log.info("Registered jupyterlab_autoresearch server extension")
