"""Starting the engine for a request: shared by POST runs and POST runs/resume (POST transfer uses
EngineStarter.kernel_executor and check_executor too)."""

from __future__ import annotations

import os
import shutil

from jupyter_core.utils import ensure_async

from ..read.workspaces import api_path
from ..routes import validate
from ..routes.validate import ApiError
from .engine_commands import server_url

# The fields that name a kernel: either one means the kernel executor, through this very server.
KERNEL_FIELDS = ("kernel", "kernel_id")


def check_executor(opts: dict) -> None:
    """Refuses an executor that contradicts the kernel fields: slurm or subprocess run without a
    kernel, and kernel needs one the server resolves (it starts or attaches it through itself)."""
    executor = opts.get("executor")
    named = next((f for f in KERNEL_FIELDS if f in opts), None)
    if named is not None and executor not in (None, "kernel"):
        raise ApiError(
            400,
            f"executor {executor} runs without a kernel, but {named} names one: send executor {executor} "
            f"alone (the picker's {'Slurm cluster' if executor == 'slurm' else 'No kernel'} entry), or {named} alone",
            "executor",
        )
    if named is None and executor == "kernel":
        raise ApiError(
            400,
            "executor kernel needs kernel (a kernelspec's name) or kernel_id (a running kernel), "
            "which the server starts or attaches through itself: send one of them",
            "executor",
        )


class EngineStarter:
    """A handler mixin (with WorkspaceLookup) that starts the engine on a workspace."""

    async def start(self, opts: dict) -> None:
        """Starts the engine on opts' workspace; answers 202 with its pid, tag and log."""
        ws = self.workspace(opts.pop("path"))
        check_executor(opts)
        if "kernel" in opts and "kernel_id" in opts:
            raise ApiError(
                400,
                "kernel and kernel_id exclude each other: kernel starts fresh kernels of a kernelspec, "
                "kernel_id attaches to a running kernel (whose kernelspec starts any fresh one); send one",
                "kernel_id",
            )
        if "kernel" in opts:
            opts.update(await self.kernel_executor(opts.pop("kernel")))
        elif "kernel_id" in opts:
            opts.update(await self.attached_kernel(opts.pop("kernel_id"), opts.get("workers", 1)))
        # The engine records the panel as where its flags came from (the journal's settings_from).
        started = await self.sup.start(ws, {**opts, "panel": True})
        self.set_status(202)
        self.finish({"path": api_path(self.sup.root, ws), **started})

    async def kernel_executor(self, name: str) -> dict:
        """Options that train in a kernel of `name` started through this very server, so local and
        gateway (remote) kernels alike; the engine reaches the server on loopback with its token."""
        spec, model = await self._python_spec(name, "kernel", f"kernel: {validate.show(name)} is not a Python kernel")
        return {"kernel": name, **self._this_server("kernel"), **self._local_python(spec, model)}

    async def attached_kernel(self, kernel_id: str, workers: int) -> dict:
        """Options that train in the running kernel `kernel_id` of this server's kernel manager (a
        notebook's, say): the engine attaches to it and never shuts it down; if it dies, a fresh
        kernel of its kernelspec, started through this server, runs the rest."""
        if workers > 1:
            # The engine refuses it too, but only once started: say it before anything runs.
            raise ApiError(
                400,
                f"kernel_id attaches one kernel, but each of workers {workers} needs its own: "
                "send kernel (its kernelspec's name) instead, or workers 1",
                "kernel_id",
            )
        # list_kernels asks a gateway for its kernels too, so one started elsewhere on it counts.
        running = await ensure_async(self.kernel_manager.list_kernels())
        found = next((k for k in running if k.get("id") == kernel_id), None)
        if found is None:
            raise ApiError(
                400,
                f"kernel_id: no running kernel {validate.show(kernel_id)} on this server; GET /api/kernels lists them",
                "kernel_id",
            )
        name = found.get("name") or ""
        spec, model = await self._python_spec(
            name,
            "kernel_id",
            f"kernel_id: {validate.show(kernel_id)} is a {validate.show(name)} kernel, not a Python one",
        )
        return {"kernel_id": kernel_id, **self._this_server("kernel_id"), **self._local_python(spec, model)}

    async def _python_spec(self, name: str, field: str, not_python: str) -> tuple[object, dict]:
        """The kernelspec `name` and its model (language, argv); refused unless it is Python, which
        the engine's runner on the kernel's side is."""
        try:
            spec = await ensure_async(self.kernel_spec_manager.get_kernel_spec(name))
        except Exception:
            raise ApiError(400, f"{field}: no kernelspec named {validate.show(name)}", field) from None
        # A local spec is a KernelSpec; a gateway's is its JSON model.
        model = spec.get("spec", {}) if isinstance(spec, dict) else {"language": spec.language, "argv": spec.argv}
        if (model.get("language") or "").lower() != "python":
            raise ApiError(400, f"{not_python}; the engine's runner is Python", field)
        return spec, model

    def _this_server(self, field: str) -> dict:
        """This server's own address and token, for the engine's kernel executor."""
        app = self.serverapp
        if app.sock:
            raise ApiError(
                400,
                f"{field}: this server listens on a Unix socket, which the engine cannot use; run it on a TCP port",
                field,
            )
        return {
            "server_url": server_url(app.ip, app.port, app.base_url, bool(app.certfile)),
            "jupyter_token": app.identity_provider.token,
        }

    @staticmethod
    def _local_python(spec: object, model: dict) -> dict:
        """The kernel's interpreter when it is on this host: the syntax check of a proposal uses it."""
        exe = (model.get("argv") or [""])[0]
        found = exe if os.path.isabs(exe) else shutil.which(exe) if exe else None
        if found and os.access(found, os.X_OK) and not isinstance(spec, dict):
            return {"python": found}
        return {}
