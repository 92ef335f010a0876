/**
 * Calls to the server extension's REST routes under `<base_url>/autoresearch/`, made with
 * Jupyter's own ServerConnection so the token and XSRF cookie go with every request. What they
 * answer is declared once, in src/core/api/responses.ts, which the server's tests check it against.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import type * as z from 'zod/mini';
import type {
  EngineInfo,
  ExperimentsPage,
  LogTail,
  NotebookExported,
  RunsList,
  RunStarted,
  RunStopping,
  RunSummary,
  ServerStatus,
  WorkspaceCreated,
  WorkspaceInfo,
  WorkspacesList,
} from '../../core/api/responses';
import type { RunRequest } from '../../core/config/run-options';

/** What `GET /autoresearch/status` answers. */
export type IServerStatus = z.infer<typeof ServerStatus>;

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
export type IWorkspaceInfo = z.infer<typeof WorkspaceInfo>;

/** The engine that holds a workspace: a run's, or a transfer study's. */
export type IEngineInfo = z.infer<typeof EngineInfo>;

/** One run's summary, as `GET /autoresearch/runs/status` and `GET /autoresearch/runs` answer (a corrupt run's has its error instead). */
export type IRunStatus = z.infer<typeof RunSummary>;

/** `GET /autoresearch/runs`: a workspace's runs, most recently active first, and the tag a Start without one gives. */
export type IRunsList = z.infer<typeof RunsList>;

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

export function listWorkspaces(settings: ServerConnection.ISettings): Promise<z.infer<typeof WorkspacesList>> {
  return requestAPI('workspaces', settings);
}

/** Where a new workspace comes from: the bundled template, or a repository laid out like the original. */
export type IWorkspaceSource = { template: 'tiny-cpu'; budget_s?: number } | { from: string; ref?: string };

/** Creates a workspace at `path` (`POST workspaces`); the server's message says what it made. */
export function createWorkspace(
  settings: ServerConnection.ISettings,
  path: string,
  source: IWorkspaceSource = { template: 'tiny-cpu' },
): Promise<z.infer<typeof WorkspaceCreated>> {
  return post('workspaces', settings, { path, ...source });
}

export function listRuns(settings: ServerConnection.ISettings, path: string): Promise<IRunsList> {
  return requestAPI(`runs${query({ path })}`, settings);
}

export function startRun(
  settings: ServerConnection.ISettings,
  path: string,
  options: IRunOptions,
): Promise<z.infer<typeof RunStarted>> {
  return post('runs', settings, { path, ...options });
}

export function resumeRun(
  settings: ServerConnection.ISettings,
  path: string,
  options: IRunOptions,
): Promise<z.infer<typeof RunStarted>> {
  return post('runs/resume', settings, { path, ...options });
}

export function stopRun(settings: ServerConnection.ISettings, path: string): Promise<z.infer<typeof RunStopping>> {
  return post('runs/stop', settings, { path });
}

export function fetchLog(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
  n: number,
  tailBytes = 16384,
): Promise<z.infer<typeof LogTail>> {
  return requestAPI(`log${query({ path, tag, n, tail_bytes: tailBytes })}`, settings);
}

export function exportNotebook(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
): Promise<z.infer<typeof NotebookExported>> {
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
): Promise<z.infer<typeof ExperimentsPage>> {
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
