/**
 * What the server extension's REST routes answer, declared once: the lab's types are these
 * schemas' z.infer (src/lab/api/server.ts), and the build writes them as JSON Schema to
 * engine/rest.schema.json (src/core/api/json-schemas.ts), against which test/python/test_rest_schemas.py
 * checks a real server's answers, so a field Python adds, drops or retypes fails a test.
 * Objects are strict: a field the server sends that is not declared here is a drift too. The
 * panel's tools' answers (./tool-answers.ts) join them in the file.
 */
import * as z from 'zod/mini';
import { ExperimentRecord } from '../journal/journal';
import { ENGINE_KINDS } from '../journal/layout';
import { RunStatus } from '../journal/run-state';
import {
  CompareAnswer,
  DecisionAnswer,
  ReviewAnswer,
  StepAnswer,
  TransferStarted,
  TransferState,
} from './tool-answers';
import { englishMessages } from '../journal/zod-english';

englishMessages();

const count = z.int().check(z.nonnegative());
const when = z.string();

/**
 * A run's state as the server serves it: the engine's own (RunStatus), "awaiting-review" while a
 * live engine waits for a reviewer, "died" when no engine works on a run that did not stop, and
 * "corrupt" when its journal or state.json cannot be read.
 */
export const SERVED_RUN_STATES = [...RunStatus.options, 'awaiting-review', 'died', 'corrupt'] as const;
export const ServedRunState = z.enum(SERVED_RUN_STATES);
export type ServedRunState = z.infer<typeof ServedRunState>;

/** A tool found on the server's host (`ok` false with a message when it cannot be used). */
const ToolInfo = z.strictObject({
  ok: z.boolean(),
  path: z.nullable(z.string()),
  version: z.nullable(z.string()),
  message: z.nullable(z.string()),
});

/** `GET status`: the package version, the engine bundle, the host's Node.js and git. */
export const ServerStatus = z.strictObject({
  version: z.string(),
  engine: z.strictObject({ path: z.string(), exists: z.boolean() }),
  node: z.strictObject({ ...ToolInfo.shape, required: z.string() }),
  git: ToolInfo,
});

/** The engine that holds a workspace (its engine.json): a run's, or a transfer study's. */
export const EngineInfo = z.strictObject({
  pid: z.int(),
  tag: z.string(),
  started: when,
  /** The process group of the training run in progress, or null between runs. */
  run_pgid: z.nullable(z.int()),
  kind: z.enum(ENGINE_KINDS),
});

/** A workspace as `GET workspaces` lists it. */
export const WorkspaceInfo = z.strictObject({
  path: z.string(),
  name: z.string(),
  program: z.boolean(),
  runs: z.array(z.string()),
  engine: z.nullable(EngineInfo),
});

export const WorkspacesList = z.strictObject({ workspaces: z.array(WorkspaceInfo) });

/** `POST workspaces` (201): what was made, in words. */
export const WorkspaceCreated = z.strictObject({ path: z.string(), message: z.string() });

/** An experiment in flight: `log` is the run log being written. */
const Flight = z.strictObject({ n: z.int(), description: z.string(), ts: when, log: z.string() });

/** One run's summary, from its state.json (src/core/journal/run-state.ts). */
export const RunSummary = z.strictObject({
  tag: z.string(),
  state: ServedRunState,
  pid: z.nullable(z.int()),
  engine_started: z.nullable(when),
  stopping: z.boolean(),
  resumable: z.boolean(),
  /** The experiment in flight started last, or null. */
  in_flight: z.nullable(Flight),
  /** With several workers, what each one runs (worker null with one). */
  in_flight_all: z.array(z.strictObject({ ...Flight.shape, worker: z.nullable(z.int()) })),
  engine_log: z.nullable(z.string()),
  /** Whether the last training run was sandboxed; null before one. */
  sandbox: z.nullable(z.enum(['on', 'off'])),
  branch: z.nullable(z.string()),
  proposer: z.nullable(z.string()),
  metric: z.nullable(z.string()),
  direction: z.nullable(z.enum(['lower', 'higher'])),
  budget_s: z.nullable(z.number()),
  workers: z.int().check(z.minimum(1)),
  started: z.nullable(when),
  updated: z.nullable(when),
  experiments: count,
  counts: z.record(z.string(), count),
  /** The engine's estimate of the best (its mean over all runs of that code). */
  best: z.nullable(z.strictObject({ n: z.int(), metric: z.nullable(z.number()), commit: z.nullable(z.string()) })),
  baseline: z.nullable(z.number()),
  /** Null when a price was unknown (a model the pricing table lacks). */
  cost_usd: z.nullable(z.number()),
  tokens: count,
  end: z.nullable(z.strictObject({ reason: z.string(), message: z.nullable(z.string()), ts: when })),
  /** Step mode: the proposal awaiting review, and whether proposals are reviewed now. */
  pending: z.nullable(z.strictObject({ n: z.int(), description: z.string(), since: when })),
  step: z.boolean(),
  /** Records a client has seen so far, for the event stream's `since`. */
  records: count,
});

/** A run the server cannot read (its journal or state.json damaged): the error says why. */
export const CorruptRun = z.strictObject({ tag: z.string(), state: z.literal('corrupt'), error: z.string() });

/** `GET runs`: a workspace's runs, most recently active first. */
export const RunsList = z.strictObject({
  path: z.string(),
  engine: z.nullable(EngineInfo),
  /** Why the last engine the server started on the workspace ended early, or null. */
  last_failure: z.nullable(z.string()),
  runs: z.array(z.union([RunSummary, CorruptRun])),
  /** The tag a Start without one gives the new run (src/core/journal/layout.ts freeTag); null when unknown (no git). */
  next_tag: z.nullable(z.string()),
});

/** `GET runs/status`: one run's summary. */
export const RunStatusReply = z.strictObject({ path: z.string(), ...RunSummary.shape });

/** `POST runs` and `POST runs/resume` (202): the engine started; exit_code when it already ended. */
export const RunStarted = z.strictObject({
  path: z.string(),
  pid: z.int(),
  tag: z.string(),
  log: z.string(),
  exit_code: z.nullable(z.int()),
});

/** `POST runs/stop` (202): SIGTERM sent; SIGKILL follows after grace_s. */
export const RunStopping = z.strictObject({
  path: z.string(),
  state: z.literal('stopping'),
  pid: z.int(),
  tag: z.string(),
  signal: z.literal('SIGTERM'),
  grace_s: z.number(),
});

/** `GET experiments`: a page of a run's experiment records, or those named by number. */
export const ExperimentsPage = z.strictObject({
  tag: z.string(),
  total: count,
  offset: count,
  limit: count,
  experiments: z.array(ExperimentRecord),
});

/** `GET log`: the end of a training log (`truncated` when it is longer than asked). */
export const LogTail = z.strictObject({
  tag: z.string(),
  n: count,
  path: z.string(),
  size: count,
  truncated: z.boolean(),
  text: z.string(),
});

/** `POST export` (201): the notebook written. */
export const NotebookExported = z.strictObject({
  path: z.string(),
  tag: z.string(),
  notebook: z.string(),
  message: z.string(),
});

/** Every refusal (4xx, 5xx): the message, and the request's field it is about when there is one. */
export const ApiErrorBody = z.strictObject({ message: z.string(), field: z.nullable(z.string()) });

/** The schemas by the name engine/rest.schema.json gives them. */
export const REST_RESPONSES = {
  status: ServerStatus,
  workspaces: WorkspacesList,
  workspace_created: WorkspaceCreated,
  runs: RunsList,
  /** A run of RunsList by itself, so a drift is named by its field rather than "none of the union". */
  run_summary: RunSummary,
  corrupt_run: CorruptRun,
  run_status: RunStatusReply,
  run_started: RunStarted,
  run_stopping: RunStopping,
  experiments: ExperimentsPage,
  log: LogTail,
  export: NotebookExported,
  error: ApiErrorBody,
  // The panel's tools (./tool-answers.ts).
  compare: CompareAnswer,
  review: ReviewAnswer,
  review_decided: DecisionAnswer,
  step: StepAnswer,
  transfer: TransferState,
  transfer_started: TransferStarted,
} as const;
