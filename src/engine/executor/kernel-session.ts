/**
 * The kernel the kernel executor runs in: attached (a researcher's, which the engine never shuts
 * down) or started here; checked before each run and replaced when it is gone, the process groups
 * a lost one left killed first on its successor.
 */
import { KernelAPI, KernelConnection, ServerConnection, type Kernel } from '@jupyterlab/services';
import WebSocket from 'ws';
import { kernelReady } from './kernel-call';
import { reapCode } from './kernel-code';
import { UserError } from '../user-error';

/** Settings for @jupyterlab/services from Node: the `ws` WebSocket and Node's global fetch. */
export function serverSettings(serverUrl: string, token = ''): ServerConnection.ISettings {
  const baseUrl = serverUrl.endsWith('/') ? serverUrl : `${serverUrl}/`;
  return ServerConnection.makeSettings({
    baseUrl,
    wsUrl: baseUrl.replace(/^http/, 'ws'),
    token,
    appendToken: true,
    WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    fetch: globalThis.fetch.bind(globalThis),
    Request: globalThis.Request,
    Headers: globalThis.Headers,
  });
}

/**
 * The engine's KERNEL_* variables as the `env` of a kernel start request (none: no `env`). A gateway
 * hands them to the kernel it starts, as jupyter_server's GatewayClient does with its own: Enterprise
 * Gateway reads KERNEL_USERNAME, KERNEL_NAMESPACE, KERNEL_IMAGE and the like to place the kernel. A
 * plain jupyter_server ignores the body's env, and through one that points at a gateway it is the
 * server's own KERNEL_* variables that go on.
 */
export function withKernelEnv(env: NodeJS.ProcessEnv = process.env): { env?: Record<string, string> } {
  const picked = Object.entries(env).filter(
    (e): e is [string, string] => e[0].startsWith('KERNEL_') && e[1] !== undefined,
  );
  return picked.length ? { env: Object.fromEntries(picked) } : {};
}

export class KernelSession {
  private started = true;
  private kernel: Kernel.IKernelConnection | null = null;
  /** Process groups a lost kernel may have left running; the next kernel kills them first. */
  private orphans: number[] = [];

  /**
   * @param kernelSpec the kernelspec of the kernels started here (an attached kernel's, once attached)
   * @param attachId the kernel to attach to, until the first run has attached (or found it gone)
   */
  constructor(
    private readonly settings: ServerConnection.ISettings,
    private kernelSpec: string,
    private attachId: string | null,
    private readonly startTimeoutS: number,
  ) {}

  /** Whether this engine started the kernel in use (and so shuts it down). */
  get owned(): boolean {
    return this.started;
  }

  /** Kernelspec of the kernels this session starts (an attached kernel's, once attached). */
  get kernelName(): string {
    return this.kernelSpec;
  }

  /** The id of the kernel in use, or null before the first run and after a loss. */
  get kernelId(): string | null {
    return this.kernel && !this.kernel.isDisposed ? this.kernel.id : null;
  }

  /** A process group a lost kernel left running: the next kernel kills it before anything else. */
  leftBehind(pgid: number): void {
    this.orphans.push(pgid);
  }

  /** Shuts the kernel down if this engine started it, else only lets go of it (the engine is stopping). */
  async dispose(): Promise<void> {
    if (this.kernel) await this.discard(this.kernel);
  }

  /** The kernel in use: attached, or started (and cleaned of orphans) if there is none or it has gone. */
  async ready(): Promise<Kernel.IKernelConnection> {
    if (this.kernel && !this.kernel.isDisposed && this.kernel.status !== 'dead') {
      // Culled, or shut down from JupyterLab, since the last run: the connection may not have noticed.
      if (await this.known(this.kernel.id)) return this.kernel;
      await this.discard(this.kernel);
    }
    let model: Kernel.IModel;
    if (this.attachId !== null) {
      const id = this.attachId;
      let found: Kernel.IModel | undefined;
      try {
        found = await KernelAPI.getKernelModel(id, this.settings);
      } catch (e) {
        throw new UserError(`cannot reach the kernel ${id} on ${this.settings.baseUrl}: ${(e as Error).message}`);
      }
      if (!found) {
        throw new UserError(
          `there is no kernel ${id} on ${this.settings.baseUrl}: pass the id of a running kernel (GET /api/kernels lists them) or drop --kernel-id to start one`,
        );
      }
      model = found;
      this.attachId = null;
      this.kernelSpec = model.name;
      this.started = false;
    } else {
      try {
        // A variable, not a literal: @jupyterlab/services types the body as {name} only, yet sends it whole.
        const body = { name: this.kernelName, ...withKernelEnv() };
        model = await KernelAPI.startNew(body, this.settings);
      } catch (e) {
        throw new UserError(
          `cannot start a "${this.kernelName}" kernel on ${this.settings.baseUrl}: ${(e as Error).message}`,
        );
      }
      this.started = true;
    }
    const kernel = new KernelConnection({ model, serverSettings: this.settings, handleComms: false });
    this.kernel = kernel;
    const info = await kernelReady(kernel, this.startTimeoutS);
    if (!info) {
      this.kernel = null;
      await this.discard(kernel);
      throw new UserError(
        `the "${this.kernelName}" kernel on ${this.settings.baseUrl} did not start within ${this.startTimeoutS} s`,
      );
    }
    if (this.orphans.length) {
      const pgids = this.orphans;
      const reap = kernel.requestExecute({ code: reapCode(pgids), silent: true, store_history: false }, true);
      const ok = await Promise.race([
        reap.done.then(
          () => true,
          () => false,
        ),
        sleep(30_000).then(() => false),
      ]);
      if (ok) this.orphans = this.orphans.filter(p => !pgids.includes(p));
    }
    return kernel;
  }

  /** Whether the server still lists the kernel; a failed look-up counts as yes (the run will tell). */
  private async known(id: string): Promise<boolean> {
    try {
      return (await KernelAPI.getKernelModel(id, this.settings)) !== undefined;
    } catch {
      return true;
    }
  }

  /** Drops a kernel's connection and shuts it down on the server if this engine started it; errors (already gone) are ignored. */
  async discard(kernel: Kernel.IKernelConnection): Promise<void> {
    // Only the kernel in use can be an attached one; any other was started here.
    const owned = this.kernel !== kernel || this.started;
    if (this.kernel === kernel) {
      this.kernel = null;
      this.started = true;
    }
    const id = kernel.id;
    if (!kernel.isDisposed) {
      // After an auto-restart the connection reconnects on its own; disposing it mid-way would
      // leave that reconnect's promise rejected with nobody to catch it.
      await sleep(200);
      await connectionSettled(kernel, 15_000);
      kernel.dispose();
    }
    // An attached kernel is the researcher's: dead or not, it is not ours to shut down.
    if (owned) await Promise.race([KernelAPI.shutdownKernel(id, this.settings).catch(() => undefined), sleep(15_000)]);
  }
}

/** Resolves once the connection is not (re)connecting, or after ms. */
function connectionSettled(kernel: Kernel.IKernelConnection, ms: number): Promise<void> {
  if (kernel.connectionStatus !== 'connecting') return Promise.resolve();
  return new Promise(resolve => {
    const done = () => {
      kernel.connectionStatusChanged.disconnect(onChange);
      clearTimeout(timer);
      resolve();
    };
    const onChange = (_: unknown, status: Kernel.ConnectionStatus) => status !== 'connecting' && done();
    const timer = setTimeout(done, ms);
    kernel.connectionStatusChanged.connect(onChange);
  });
}

/** Waits ms without keeping the engine alive (an unref'd timer). */
export function sleep(ms: number): Promise<void> {
  return new Promise(r => setTimeout(r, ms).unref());
}
