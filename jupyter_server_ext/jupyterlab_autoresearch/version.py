"""The package's version, for `__init__` and the status route alike (no import of the package itself)."""

try:
    from ._version import __version__
except ImportError:  # a source tree that was never built or installed
    import warnings

    warnings.warn("Importing 'jupyterlab_autoresearch' outside a proper installation.", stacklevel=2)
    __version__ = "dev"

__all__ = ["__version__"]
