"""An export opens trusted: the server's export route signs it with the server's own notary, and
the `autoresearch export` console script with the user's default one (as `jupyter trust` does)."""

import json
import subprocess
import sys
from pathlib import Path

from nbformat.sign import NotebookNotary

from conftest import make_workspace
from jupyterlab_autoresearch.node import engine_path
from jupyterlab_autoresearch.notebooks.signing import is_trusted


def one_run(ws: Path) -> None:
    subprocess.run(
        ["node", str(engine_path()), "run", str(ws), "--tag", "t1", "--proposer", "offline", "--max-experiments", "1"],
        check=True,
        capture_output=True,
        timeout=120,
    )


async def test_the_export_route_writes_a_notebook_the_server_trusts(
    jp_root_dir, jp_serverapp, engine_bundle, api, jp_fetch
):
    ws = make_workspace(Path(jp_root_dir) / "ws")
    one_run(ws)
    notary = jp_serverapp.contents_manager.notary
    code, exported = await api("export", "POST", {"path": "ws", "tag": "t1"})
    assert code == 201, exported
    assert is_trusted(ws / "t1.ipynb", notary)
    # What JupyterLab reads: the contents API marks every code cell trusted.
    model = json.loads((await jp_fetch("api", "contents", "ws/t1.ipynb")).body)
    code_cells = [c for c in model["content"]["cells"] if c["cell_type"] == "code"]
    assert code_cells and all(c["metadata"].get("trusted") is True for c in code_cells)


def test_the_console_script_trusts_what_it_exports(tmp_path, engine_bundle, monkeypatch):
    ws = make_workspace(tmp_path / "ws")
    one_run(ws)
    data = tmp_path / "jupyter-data"
    env_run = {"JUPYTER_DATA_DIR": str(data)}
    script = [sys.executable, "-m", "jupyterlab_autoresearch.cli", "export", str(ws), "--tag", "t1"]
    done = subprocess.run(script, capture_output=True, text=True, timeout=120, env={**_env(), **env_run})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {ws / 't1.ipynb'} (run t1, ")
    with NotebookNotary(data_dir=str(data)) as notary:
        assert notary.check_signature(json_notebook(ws / "t1.ipynb"))
    # Another user's database does not trust it: the signature is what makes it trusted.
    (tmp_path / "elsewhere").mkdir()
    with NotebookNotary(data_dir=str(tmp_path / "elsewhere")) as other:
        assert not other.check_signature(json_notebook(ws / "t1.ipynb"))
    # `--out -` writes no file, so there is nothing to sign, and stdout is the notebook alone.
    piped = subprocess.run([*script, "--out", "-"], capture_output=True, text=True, timeout=120, env=_env())
    assert piped.returncode == 0 and json.loads(piped.stdout)["nbformat"] == 4


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def json_notebook(path: Path):
    import nbformat

    return nbformat.read(path, as_version=4)
