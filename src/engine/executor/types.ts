/** What the loop asks of an executor: run the workspace's command once, within a deadline. */
import type { Limits, LimitsSetting } from '../../core/config/limits';
import type { LogCapture } from '../experiment/log-capture';

/** What a training run may reach (run-guard.py enforces it). */
export interface RunIsolation {
  /** bubblewrap: on where it works (auto), required (on), or not used (off). */
  sandbox: 'auto' | 'on' | 'off';
  /** Whether the sandbox keeps the network (off by default). */
  network: boolean;
  /** Workspace files the run may read but not change (program.md's readonly). */
  readonly: string[];
  /** The run's process and file size limits as program.md sets them (absent: the defaults). */
  limits?: LimitsSetting;
}

export interface RunRequest {
  /** Working directory of the run (the workspace). */
  cwd: string;
  /** Shell command, e.g. `python train.py`. */
  command: string;
  /** Seconds after which the whole process group is killed and the run counts as a crash. */
  timeoutS: number;
  /** Extra environment for the run. */
  env?: Record<string, string>;
  /** The interpreter that runs the guard (subprocess executor; default python3). */
  python?: string;
  /** The sandbox and what it protects; default: sandbox auto, no network. */
  isolation?: RunIsolation;
  log: LogCapture;
  /** Aborting interrupts the run (SIGINT/SIGTERM to the engine, or `autoresearch stop`). */
  signal?: AbortSignal;
  /**
   * Called with the run's process groups (the guard's, then also the command's, with its cgroup
   * folders) as they start; null when the run ends.
   */
  onSpawn?: (pgids: number[] | null, cgroups?: string[]) => void;
  /** Called with the kernel a run goes to (kernel executor): recorded so a later engine can clean up after this one. */
  onKernel?: (kernel: RunKernel) => void;
  /**
   * What a scheduler lists the run as (`autoresearch-<tag>-<n>-<i>`: the Slurm job's name), and the
   * workspace it belongs to (its comment), by which a later engine finds the jobs of one that died.
   */
  name?: string;
  workspace?: string;
  /** A queued executor (Slurm): the scheduler holds the run, as job `id`. */
  onQueued?: (job: RunJob) => void;
  /** A queued executor: the run left the queue and started training, at this time (ms since the epoch). */
  onStarted?: (startedAt: number) => void;
}

/** A scheduler's job a run went to. */
export interface RunJob {
  scheduler: 'slurm';
  id: string;
}

/** A Jupyter kernel an engine ran experiments in. */
export interface RunKernel {
  /** The server's base URL, as the executor was given it. */
  server: string;
  id: string;
  /** Started by the engine (shut down when done), or attached with --kernel-id (left running). */
  owned: boolean;
}

export interface RunOutcome {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  interrupted: boolean;
  seconds: number;
  /** Whether the run was sandboxed; absent when the guard did not report (it was killed). */
  sandbox?: 'on' | 'off';
  /** Processes the run left behind, killed when it ended. */
  strays?: number;
  /** The limits the run had, as the guard applied them; absent when it did not report. */
  limits?: Partial<Limits>;
  /** What the sandbox lacked where it could not be had whole (sandbox auto), e.g. the user namespace. */
  missing?: string[];
  /** Why the run failed when its output cannot say: its guard was killed, it reached a limit, Slurm ended its job. */
  failure?: string;
  /** Seconds a scheduler held the run before it started (not in `seconds`, which is the run's own). */
  queueS?: number;
  /** The scheduler's job the run was (the last one, where a preempted job was run again). */
  job?: RunJob & { node?: string; requeued?: boolean };
}

export interface Executor {
  readonly name: string;
  run(req: RunRequest): Promise<RunOutcome>;
  /**
   * Cleans up after an engine that died (kill -9) with runs on kernels: interrupts them, so
   * their runners end the training, and shuts down the ones it had started.
   */
  reclaim?(left: RunKernel[], workspace: string): Promise<void>;
  /**
   * Whether runs can wait in a queue before they start (Slurm): the executor then says when one
   * starts (RunRequest.onStarted), and only then does its budget count down.
   */
  readonly queued?: boolean;
  /** Lets go of what the executor keeps between runs (a kernel, the run guard). */
  dispose?(): Promise<void>;
}
