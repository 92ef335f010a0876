"""Export writes through nothing a training run planted, and signs only what it wrote: links at the
old predictable temp names (`.<tag>.ipynb.<pid>.tmp`) and at `<tag>.ipynb` itself, and a FIFO at
program.md. Real engine, real server, real notary; the victims are real files outside the workspace."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary

from conftest import make_workspace
from jupyterlab_autoresearch.node import engine_path

RC = "# ~/.bashrc\nexport PATH=$PATH\n"


def one_run(ws: Path) -> None:
    subprocess.run(
        ["node", str(engine_path()), "run", str(ws), "--tag", "t1", "--proposer", "offline", "--max-experiments", "1"],
        check=True,
        capture_output=True,
        timeout=120,
    )


def plant_temp_links(ws: Path, victim: Path, count: int = 20_000) -> range:
    """Links at `.t1.ipynb.<pid>.tmp` for the next pids the kernel hands out: the names the export used to write through."""
    last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
    pids = range(last + 1, last + count)
    for pid in pids:
        os.symlink(victim, ws / f".t1.ipynb.{pid}.tmp")
    return pids


def outside_notebook(folder: Path) -> Path:
    """A notebook outside the workspace whose outputs would run if it were trusted."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "", outputs=[nbformat.v4.new_output("display_data", {"text/html": "<script>steal()</script>"})]
        )
    )
    file = folder / "evil.ipynb"
    nbformat.write(nb, file)
    return file


async def test_post_export_does_not_write_through_planted_tmp_links_nor_sign_the_target(
    jp_root_dir, jp_serverapp, engine_bundle, api
):
    ws = make_workspace(Path(jp_root_dir) / "ws")
    one_run(ws)
    outside = Path(jp_root_dir).parent
    rc = outside / "bashrc"
    rc.write_text(RC)
    evil = outside_notebook(outside)
    evil_text = evil.read_text()
    plant_temp_links(ws, rc)
    # And a link at the notebook's own name: the route used to sign whatever it led to.
    (ws / "t1.ipynb").symlink_to(evil)
    notary = jp_serverapp.contents_manager.notary
    code, reply = await api("export", "POST", {"path": "ws", "tag": "t1"})
    assert code == 201, reply
    assert rc.read_text() == RC
    assert evil.read_text() == evil_text
    assert not notary.check_signature(nbformat.read(evil, as_version=4))
    assert (ws / "t1.ipynb").is_file() and not (ws / "t1.ipynb").is_symlink()
    assert notary.check_signature(nbformat.read(ws / "t1.ipynb", as_version=4))
    assert reply["message"].startswith(f"wrote {ws / 't1.ipynb'} (run t1, ")
    # No temp file of the server's is left: its temp went to .autoresearch/ and was renamed.
    assert not [p for p in (ws / ".autoresearch").iterdir() if p.name.endswith(".tmp")]


async def test_post_export_with_a_fifo_at_program_md_is_a_4xx_naming_it_never_a_hang(jp_root_dir, engine_bundle, api):
    ws = make_workspace(Path(jp_root_dir) / "ws")
    one_run(ws)
    (ws / "program.md").unlink()
    os.mkfifo(ws / "program.md")
    code, reply = await asyncio.wait_for(api("export", "POST", {"path": "ws", "tag": "t1"}), 60)
    assert code == 400, reply
    assert "program.md is a FIFO, not a regular file" in reply["message"]
    assert not (ws / "t1.ipynb").exists()


async def test_post_export_with_a_folder_at_the_notebook_s_name_is_a_409(jp_root_dir, engine_bundle, api):
    ws = make_workspace(Path(jp_root_dir) / "ws")
    one_run(ws)
    (ws / "t1.ipynb").mkdir()
    code, reply = await api("export", "POST", {"path": "ws", "tag": "t1"})
    assert code == 409, reply
    assert "ws/t1.ipynb" in reply["message"] and "remove what is in its place" in reply["message"]


def test_the_console_export_does_not_write_through_planted_tmp_links(tmp_path, engine_bundle):
    ws = make_workspace(tmp_path / "ws")
    one_run(ws)
    rc = tmp_path / "bashrc"
    rc.write_text(RC)
    plant_temp_links(ws, rc)
    data = tmp_path / "jupyter-data"
    script = [sys.executable, "-m", "jupyterlab_autoresearch.cli", "export", str(ws), "--tag", "t1"]
    done = subprocess.run(
        script, capture_output=True, text=True, timeout=120, env={**os.environ, "JUPYTER_DATA_DIR": str(data)}
    )
    assert done.returncode == 0, done.stderr
    assert rc.read_text() == RC
    assert (ws / "t1.ipynb").is_file() and not (ws / "t1.ipynb").is_symlink()
    with NotebookNotary(data_dir=str(data)) as notary:
        assert notary.check_signature(nbformat.read(ws / "t1.ipynb", as_version=4))
