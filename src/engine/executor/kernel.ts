/**
 * Runs the training command through a Jupyter kernel, so it trains in the
 * kernel's environment (often the one with the GPU). One kernel of the chosen
 * kernelspec is started on first use and reused; each experiment executes a
 * small runner in it (kernel-code.ts) that starts the command in its own
 * process group, streams its output back over iopub and reports the exit.
 *
 * Deadline and stop: the kernel is interrupted; the runner catches the
 * KeyboardInterrupt, SIGTERMs the group, waits the grace, SIGKILLs it. A kernel
 * that does not answer within the grace (plus a margin) is shut down. A kernel
 * that dies or restarts mid-run makes that experiment a crash; the next one
 * gets a fresh kernel, whose first act is to SIGKILL the group the old one left.
 *
 * Attaching: with kernelId the first experiment runs in that existing kernel
 * (a researcher's GPU kernel); the engine never shuts it down. If it dies, a
 * fresh kernel of its kernelspec takes over, which the engine does own.
 *
 * Remote kernels: a kernel that cannot read the workspace at the engine's path
 * (found by a probe file, once per kernel and cwd) gets the tracked files
 * shipped to a folder on its side before each experiment, only what changed
 * (ship.ts); the command runs there. Caches outside that folder (the prepared
 * data in ~/.cache/autoresearch or $AUTORESEARCH_CACHE) stay between runs.
 *
 * Culling and activity (jupyter_server 2.x, MappingKernelManager): a kernel is
 * culled only when idle past cull_idle_timeout AND (cull_busy or not busy) AND
 * (cull_connected or no connections). cull_busy and cull_connected default to
 * False, and the runner keeps the kernel busy for the whole run while this
 * executor holds a websocket to it, so the culler leaves it alone; only a
 * server set to cull busy kernels would cull it, and then the next experiment
 * sees it gone (checked before each run) and starts a fresh one. The server's
 * own shutdown_no_activity_timeout never fires while a kernel exists. Every
 * iopub message updates the kernel's and the server's last_activity (what
 * JupyterHub's idle culler reads from /api/status): output does while the
 * script prints, and the runner sends a heartbeat report after HEARTBEAT_S of
 * silence. Through a gateway the same rules apply on the gateway's side.
 */
import { randomUUID } from 'node:crypto';
import { KernelAPI, type Kernel, type KernelMessage, type ServerConnection } from '@jupyterlab/services';
import { KernelCallError } from './kernel-call';
import { RUN_MIME, runnerCode, type KernelReport } from './kernel-code';
import { KernelSession, serverSettings, sleep } from './kernel-session';
import {
  DEFAULT_ISOLATION,
  GUARD_KILLED,
  GUARD_MARGIN_S,
  GuardReport,
  guardConfig,
  outcomeOf,
  SandboxMemo,
  secretHashes,
} from './guard';
import { sharesFilesystem, shipWorkspace } from './ship';
import { watchForStop } from './stop-watch';
import { KILL_GRACE_S } from './subprocess';
import type { Executor, RunKernel, RunOutcome, RunRequest } from './types';

/** Seconds past the engine's own give-up point at which the kernel side ends a run by itself. */
const BACKSTOP_MARGIN_S = 30;

export interface KernelExecutorOptions {
  /** The Jupyter server, e.g. http://127.0.0.1:8888/ (a base_url path included). */
  serverUrl: string;
  token?: string;
  /** Kernelspec name; default python3. */
  kernelName?: string;
  /** Seconds between SIGTERM and SIGKILL of the run's group. */
  graceS?: number;
  /** Seconds past the grace to wait for an interrupted kernel before restarting it. */
  interruptMarginS?: number;
  /** Seconds to wait for a new kernel to answer kernel_info. */
  startTimeoutS?: number;
  /** Run the first experiment in this existing kernel (its kernelspec then names the fresh ones). */
  kernelId?: string;
  /** Ship the workspace to the kernel: when it cannot see it (auto, the default), always, or never. */
  ship?: ShipMode;
  /** Seconds allowed for one probe or shipping exchange. */
  shipTimeoutS?: number;
  /** Seconds of silence from a run before the runner reports it is alive (default HEARTBEAT_S). */
  heartbeatS?: number;
}

export type ShipMode = 'auto' | 'always' | 'never';

type Ending = { kind: 'report'; report: Extract<KernelReport, { event: 'exit' }> } | { kind: 'lost'; why: string };

export class KernelExecutor implements Executor {
  readonly name = 'kernel';
  private readonly settings: ServerConnection.ISettings;
  private readonly session: KernelSession;
  private readonly ship: ShipMode;
  private readonly shipTimeoutS: number;
  private readonly heartbeatS: number | undefined;
  /** Probe results: kernel id + cwd → whether that kernel reads the cwd at the same path. */
  private readonly shared = new Map<string, boolean>();
  /** Where the last run's command ran on the kernel's side. */
  lastWorkdir: string | null = null;
  private readonly graceS: number;
  private readonly marginS: number;
  private readonly memo = new SandboxMemo();
  /** The engine's secrets and this server's token, hashed once. */
  private readonly secrets: string[];

  constructor(opts: KernelExecutorOptions) {
    this.ship = opts.ship ?? 'auto';
    this.shipTimeoutS = opts.shipTimeoutS ?? 300;
    this.heartbeatS = opts.heartbeatS;
    this.settings = serverSettings(opts.serverUrl, opts.token);
    this.secrets = secretHashes([this.settings.token]);
    this.graceS = opts.graceS ?? KILL_GRACE_S;
    this.marginS = opts.interruptMarginS ?? 10;
    this.session = new KernelSession(
      this.settings,
      opts.kernelName ?? 'python3',
      opts.kernelId ?? null,
      opts.startTimeoutS ?? 120,
    );
  }

  /** Kernelspec of the kernels this executor starts (an attached kernel's, once attached). */
  get kernelName(): string {
    return this.session.kernelName;
  }

  /** The id of the kernel in use, or null before the first run and after a loss. */
  get kernelId(): string | null {
    return this.session.kernelId;
  }

  async run(req: RunRequest): Promise<RunOutcome> {
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    const kernel = await this.session.ready();
    req.onKernel?.({ server: this.settings.baseUrl, id: kernel.id, owned: this.session.owned });
    let cwd: string;
    try {
      cwd = await this.workdir(kernel, req);
    } catch (e) {
      if (!(e instanceof KernelCallError)) throw e;
      req.log.write(
        Buffer.from(
          `\n[autoresearch] kernel error: could not ship the workspace to the ${this.kernelName} kernel: ${e.message}${e.kernelLost ? '; a fresh kernel runs the next experiment' : ''}\n`,
        ),
      );
      if (e.kernelLost) await this.session.discard(kernel);
      return {
        exitCode: null,
        signal: null,
        timedOut: false,
        interrupted: req.signal?.aborted ?? false,
        seconds: seconds(),
      };
    }
    this.lastWorkdir = cwd;
    const nonce = randomUUID();
    // PATH from the engine names the engine's interpreter; the runner puts the kernel's first instead.
    const { PATH: _enginePath, ...env } = req.env ?? {};
    const future = kernel.requestExecute(
      {
        // The backstop lies past the point where this engine gives the kernel up: it only acts
        // when the engine died mid-run and nobody else will end the run.
        code: runnerCode({
          // cwd, env, parent and report_fd are the kernel side's to fill in.
          guard: guardConfig(req, {
            cwd,
            env: {},
            parent: null,
            reportFd: -1,
            graceS: this.graceS,
            memo: this.memo,
            secrets: this.secrets,
          }),
          cwd,
          env,
          graceS: this.graceS,
          nonce,
          heartbeatS: this.heartbeatS,
          backstopS: req.timeoutS + this.graceS + GUARD_MARGIN_S + this.marginS + BACKSTOP_MARGIN_S,
        }),
        silent: false,
        store_history: false,
        allow_stdin: false,
        stop_on_error: false,
      },
      true,
    );

    let pgid: number | null = null;
    let stopping = false;
    let rescueTimer: NodeJS.Timeout | undefined;
    let interrupting: Promise<void> = Promise.resolve();
    let settle!: (e: Ending) => void;
    const ending = new Promise<Ending>(resolve => (settle = resolve));

    future.onIOPub = (msg: KernelMessage.IIOPubMessage) => {
      const type = msg.header.msg_type;
      if (type === 'stream') {
        req.log.write(Buffer.from((msg.content as KernelMessage.IStreamMsg['content']).text, 'utf8'));
      } else if (type === 'display_data') {
        const report = (msg.content as KernelMessage.IDisplayDataMsg['content']).data[RUN_MIME] as
          KernelReport | undefined;
        if (!report || report.nonce !== nonce) return;
        if (report.event === 'spawn') {
          pgid = report.pgid;
        } else if (report.event === 'exit') {
          settle({ kind: 'report', report });
        }
      } else if (type === 'error') {
        const c = msg.content as KernelMessage.IErrorMsg['content'];
        req.log.write(Buffer.from(`\n[autoresearch] kernel error: ${c.ename}: ${c.evalue}\n`));
      }
    };
    future.done.then(
      () => settle({ kind: 'lost', why: `the ${this.kernelName} kernel finished the run without reporting its end` }),
      () => settle({ kind: 'lost', why: `the ${this.kernelName} kernel died or restarted during this experiment` }),
    );
    const onStatus = (_: unknown, status: Kernel.Status) => {
      if (status === 'dead' || status === 'restarting' || status === 'autorestarting') {
        settle({
          kind: 'lost',
          why: `the ${this.kernelName} kernel died or restarted during this experiment (status ${status})`,
        });
      }
    };
    kernel.statusChanged.connect(onStatus);

    const terminate = () => {
      if (stopping) return;
      stopping = true;
      interrupting = kernel.interrupt().catch(() => undefined);
      rescueTimer = setTimeout(
        () =>
          settle({
            kind: 'lost',
            why: `the ${this.kernelName} kernel did not answer the interrupt within ${this.graceS + GUARD_MARGIN_S + this.marginS} s; shut it down`,
          }),
        (this.graceS + GUARD_MARGIN_S + this.marginS) * 1000,
      );
    };
    const stop = watchForStop(req, terminate);

    const end = await ending;
    stop.dispose();
    clearTimeout(rescueTimer);
    kernel.statusChanged.disconnect(onStatus);
    // An interrupt still in flight must not land on the next experiment's code.
    await Promise.race([interrupting, sleep(5000)]);

    if (end.kind === 'report') {
      const r = end.report;
      // The reply follows the report at once; waiting for it keeps the kernel's queue in order.
      await Promise.race([future.done.catch(() => undefined), sleep(5000)]);
      if (r.error) req.log.write(Buffer.from(`\n[autoresearch] kernel error: the runner failed: ${r.error}\n`));
      if (r.backstop)
        req.log.write(
          Buffer.from(
            `\n[autoresearch] the run passed its deadline with no word from the engine; the kernel's side ended it\n`,
          ),
        );
      const guard = GuardReport.safeParse(r.guard);
      this.memo.learn(req.isolation ?? DEFAULT_ISOLATION, guard.success ? guard.data : null);
      // An interrupt nobody here sent (someone pressed stop on that kernel) killed the run: a crash, as a signal would be.
      return {
        exitCode: r.exit_code,
        signal: r.signal,
        timedOut: stop.timedOut,
        interrupted: stop.interrupted,
        seconds: seconds(),
        ...(guard.success && outcomeOf(guard.data)),
        ...(r.guard_killed && { failure: GUARD_KILLED }),
      };
    }
    // The kernel is lost: say so in the log (the loop's crash reason reads the log's last error line).
    req.log.write(Buffer.from(`\n[autoresearch] kernel error: ${end.why}; a fresh kernel runs the next experiment\n`));
    future.dispose();
    await this.session.discard(kernel);
    if (pgid !== null) this.session.leftBehind(pgid);
    // Kill what the lost kernel left now, on a fresh kernel, so the run really ends here.
    await this.session.ready().catch(() => undefined);
    return { exitCode: null, signal: null, timedOut: stop.timedOut, interrupted: stop.interrupted, seconds: seconds() };
  }

  /**
   * After a kill -9 of the previous engine: interrupts the kernels its runs went to on this
   * server, so each runner ends its training (SIGTERM, grace, SIGKILL of the group), and shuts
   * down those that engine had started. Gone kernels are skipped; nothing here stops the run.
   */
  async reclaim(left: RunKernel[]): Promise<void> {
    const mine = left.filter(k => k.server === this.settings.baseUrl);
    await Promise.all(
      mine.map(async k => {
        try {
          if (!(await KernelAPI.getKernelModel(k.id, this.settings))) return;
          await KernelAPI.interruptKernel(k.id, this.settings);
          // The runner needs the grace to end its group; an idle kernel has finished with it.
          const until = Date.now() + (this.graceS + GUARD_MARGIN_S + this.marginS) * 1000;
          while (
            Date.now() < until &&
            (await KernelAPI.getKernelModel(k.id, this.settings))?.execution_state === 'busy'
          ) {
            // Not the unref'd sleep: nothing else may be keeping the engine alive yet.
            await new Promise(resolve => setTimeout(resolve, 250));
          }
          if (k.owned) await KernelAPI.shutdownKernel(k.id, this.settings);
        } catch {
          // Unreachable or already gone: the runner's own backstop still ends its run.
        }
      }),
    );
  }

  /** Shuts the kernel down if this engine started it, else only lets go of it (the engine is stopping). */
  async dispose(): Promise<void> {
    await this.session.dispose();
  }

  /** Where the command runs on the kernel's side: the cwd itself, or the folder the workspace was shipped to. */
  private async workdir(kernel: Kernel.IKernelConnection, req: RunRequest): Promise<string> {
    if (this.ship === 'never') return req.cwd;
    const timeoutMs = this.shipTimeoutS * 1000;
    if (this.ship === 'auto') {
      const key = `${kernel.id}\0${req.cwd}`;
      let shared = this.shared.get(key);
      if (shared === undefined) {
        shared = await sharesFilesystem(kernel, req.cwd, timeoutMs);
        this.shared.set(key, shared);
      }
      if (shared) return req.cwd;
    }
    const r = await shipWorkspace(kernel, req.cwd, timeoutMs);
    const size =
      r.bytes < 1024 * 1024 ? `${(r.bytes / 1024).toFixed(1)} KiB` : `${(r.bytes / 1024 / 1024).toFixed(1)} MiB`;
    req.log.write(
      Buffer.from(
        `[autoresearch] workspace shipped to ${r.host}:${r.root} (${plural(r.sent, 'file')} sent, ${size}; ${r.removed} removed)\n`,
      ),
    );
    return r.root;
  }
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
