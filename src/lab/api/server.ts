/**
 * Calls to the server extension's REST routes under `<base_url>/autoresearch/`, made with
 * Jupyter's own ServerConnection so the token and XSRF cookie go with every request.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import type { RunRequest } from '../../core/config/run-options';
import type { ExperimentRecord } from '../../core/journal/journal';

/** What `GET /autoresearch/status` answers. */
export interface IServerStatus {
  version: string;
  engine: { path: string; exists: boolean };
  node: {
    ok: boolean;
    path: string | null;
    version: string | null;
    required: string;
    message: string | null;
  };
  /** Absent from servers older than the git check. */
  git?: { ok: boolean; path: string | null; version: string | null; message: string | null };
}

/** Sends a request to `<base_url>/autoresearch/<endPoint>` and returns the parsed JSON body. */
export async function requestAPI<T>(
  endPoint: string,
  serverSettings: ServerConnection.ISettings,
  init: RequestInit = {},
): Promise<T> {
  const url = URLExt.join(serverSettings.baseUrl, 'autoresearch', endPoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, serverSettings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const text = await response.text();
  let data: unknown = text;
  if (text.length > 0) {
    try {
      data = JSON.parse(text);
    } catch {
      // Not JSON (a proxy's error page, say): keep the text for the error message.
    }
  }
  if (!response.ok) {
    const message = (data as { message?: string } | null)?.message ?? String(data);
    throw new ServerConnection.ResponseError(response, message);
  }
  return data as T;
}

/** Fetches the server extension's status: version, engine bundle and Node.js on the server host. */
export function fetchStatus(serverSettings: ServerConnection.ISettings): Promise<IServerStatus> {
  return requestAPI<IServerStatus>('status', serverSettings);
}

/** A workspace as `GET /autoresearch/workspaces` lists it. */
export interface IWorkspaceInfo {
  path: string;
  name: string;
  program: boolean;
  runs: string[];
  engine: IEngineInfo | null;
}

export interface IEngineInfo {
  pid: number;
  tag: string;
  started: string;
  /** What the engine does: a run, or a transfer study of the run's kept commits (absent from older servers: a run). */
  kind?: 'run' | 'transfer';
}

/** One run's summary, as `GET /autoresearch/runs/status` and `GET /autoresearch/runs` answer. */
export interface IRunStatus {
  tag: string;
  state: 'running' | 'awaiting-review' | 'stopped' | 'died' | 'corrupt';
  pid: number | null;
  stopping: boolean;
  resumable: boolean;
  in_flight: { n: number; description: string; ts: string; log: string } | null;
  metric: string | null;
  direction: 'lower' | 'higher' | null;
  budget_s: number | null;
  proposer: string | null;
  experiments: number;
  best: { n: number; metric: number | null; commit: string | null } | null;
  baseline: number | null;
  cost_usd: number;
  end: { reason: string; message: string | null; ts: string } | null;
  records: number;
  /** Step mode: the proposal awaiting review, and whether proposals are reviewed now. */
  pending?: { n: number; description: string; since: string } | null;
  step?: boolean;
  error?: string;
}

export interface IRunsList {
  path: string;
  engine: IEngineInfo | null;
  last_failure: string | null;
  runs: IRunStatus[];
  /** The tag a Start without one gives the new run (src/core/journal/layout.ts freeTag); null when unknown (no git). */
  next_tag?: string | null;
}

/**
 * What the panel may pass when it starts or resumes a run: the run options the server takes, as
 * src/core/config/run-options.ts declares them (resume is what the resume route itself means). Among them
 * kernel_id: a running kernel of the server to attach to (a notebook's), which the server checks.
 */
export type IRunOptions = Omit<RunRequest, 'resume'>;

/** POSTs JSON to `<base_url>/autoresearch/<endPoint>`. */
export function post<T>(endPoint: string, settings: ServerConnection.ISettings, body: unknown): Promise<T> {
  return requestAPI<T>(endPoint, settings, { method: 'POST', body: JSON.stringify(body) });
}

/** A query string of the parameters given (undefined ones left out). */
export function query(params: Record<string, string | number | undefined>): string {
  const q = Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  return q ? `?${q}` : '';
}

export function listWorkspaces(settings: ServerConnection.ISettings): Promise<{ workspaces: IWorkspaceInfo[] }> {
  return requestAPI('workspaces', settings);
}

/** Where a new workspace comes from: the bundled template, or a repository laid out like the original. */
export type IWorkspaceSource = { template: 'tiny-cpu'; budget_s?: number } | { from: string; ref?: string };

/** Creates a workspace at `path` (`POST workspaces`); the server's message says what it made. */
export function createWorkspace(
  settings: ServerConnection.ISettings,
  path: string,
  source: IWorkspaceSource = { template: 'tiny-cpu' },
): Promise<{ path: string; message: string }> {
  return post('workspaces', settings, { path, ...source });
}

export function listRuns(settings: ServerConnection.ISettings, path: string): Promise<IRunsList> {
  return requestAPI(`runs${query({ path })}`, settings);
}

export function startRun(
  settings: ServerConnection.ISettings,
  path: string,
  options: IRunOptions,
): Promise<{ path: string; tag: string; pid: number }> {
  return post('runs', settings, { path, ...options });
}

export function resumeRun(
  settings: ServerConnection.ISettings,
  path: string,
  options: IRunOptions,
): Promise<{ path: string; tag: string; pid: number }> {
  return post('runs/resume', settings, { path, ...options });
}

export function stopRun(settings: ServerConnection.ISettings, path: string): Promise<{ state: string }> {
  return post('runs/stop', settings, { path });
}

export function fetchLog(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
  n: number,
  tailBytes = 16384,
): Promise<{ text: string; truncated: boolean; path: string }> {
  return requestAPI(`log${query({ path, tag, n, tail_bytes: tailBytes })}`, settings);
}

export function exportNotebook(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
): Promise<{ notebook: string; message: string }> {
  return post('export', settings, { path, tag });
}

/**
 * Experiments of a run by number, whole (the event stream's light replay leaves out what only a
 * rendered output shows); at most 200 numbers a request. Those not in the journal are not returned.
 */
export function fetchExperiments(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
  numbers: readonly number[],
): Promise<{ experiments: ExperimentRecord[] }> {
  return requestAPI(`experiments${query({ path, tag, n: numbers.join(',') })}`, settings);
}

/** The URL of a run's event WebSocket, `since` records in; `light`: the replay sent light. */
export function eventsUrl(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string | null,
  since: number,
  light = false,
): string {
  const params: Record<string, string | number | undefined> = {
    path,
    tag: tag ?? undefined,
    since,
    light: light ? 1 : undefined,
  };
  if (settings.token) {
    params.token = settings.token;
  }
  return URLExt.join(settings.wsUrl, 'autoresearch', 'events') + query(params);
}
