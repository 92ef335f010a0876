"""`python -m jupyterlab_autoresearch.server_config_help`: the server extension's settings with
their help, as `--help-all` shows an application's. `jupyter server --help-all` cannot list them:
it prints and exits while parsing its arguments, before the server has looked for any extension."""

from __future__ import annotations

from .server_config import Autoresearch

HOW_TO_SET = """\
The autoresearch server extension's settings. Set them in jupyter_server_config.py
(c.Autoresearch.stop_grace_s = 30.0), in jupyter_server_config.json
({"Autoresearch": {"stop_grace_s": 30.0}}), or on the server's command line
(jupyter lab --Autoresearch.stop_grace_s=30). docs/server-config.md has the environment
variables the server and the engine read as well.
"""


def main() -> None:
    print(HOW_TO_SET)
    print(Autoresearch.class_get_help())


if __name__ == "__main__":
    main()
