"""Starting the engine for a request: shared by POST runs and POST runs/resume (and only them)."""

from __future__ import annotations

import os
import shutil

from jupyter_core.utils import ensure_async

from . import validate
from .engine_commands import server_url
from .validate import ApiError
from .workspaces import api_path


class EngineStarter:
    """A handler mixin (with WorkspaceLookup) that starts the engine on a workspace."""

    async def start(self, opts: dict) -> None:
        """Starts the engine on opts' workspace; answers 202 with its pid, tag and log."""
        ws = self.workspace(opts.pop("path"))
        if "kernel" in opts:
            opts.update(await self.kernel_executor(opts.pop("kernel")))
        started = await self.sup.start(ws, opts)
        self.set_status(202)
        self.finish({"path": api_path(self.sup.root, ws), **started})

    async def kernel_executor(self, name: str) -> dict:
        """Options that train in a kernel of `name` started through this very server, so local and
        gateway (remote) kernels alike; the engine reaches the server on loopback with its token."""
        try:
            spec = await ensure_async(self.kernel_spec_manager.get_kernel_spec(name))
        except Exception:
            raise ApiError(400, f"kernel: no kernelspec named {validate.show(name)}", "kernel") from None
        # A local spec is a KernelSpec; a gateway's is its JSON model.
        model = spec.get("spec", {}) if isinstance(spec, dict) else {"language": spec.language, "argv": spec.argv}
        if (model.get("language") or "").lower() != "python":
            raise ApiError(
                400, f"kernel: {validate.show(name)} is not a Python kernel; the engine's runner is Python", "kernel"
            )
        app = self.serverapp
        if app.sock:
            raise ApiError(
                400,
                "kernel: this server listens on a Unix socket, which the engine cannot use; run it on a TCP port",
                "kernel",
            )
        opts = {
            "kernel": name,
            "server_url": server_url(app.ip, app.port, app.base_url, bool(app.certfile)),
            "jupyter_token": app.identity_provider.token,
        }
        # The syntax check of a proposal uses the kernel's interpreter when it is on this host.
        exe = (model.get("argv") or [""])[0]
        found = exe if os.path.isabs(exe) else shutil.which(exe) if exe else None
        if found and os.access(found, os.X_OK) and not isinstance(spec, dict):
            opts["python"] = found
        return opts
