/**
 * Calls to the server extension's REST routes under `<base_url>/autoresearch/`, made with
 * Jupyter's own ServerConnection so the token and XSRF cookie go with every request.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

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
}

/** Sends a request to `<base_url>/autoresearch/<endPoint>` and returns the parsed JSON body. */
export async function requestAPI<T>(
  endPoint: string,
  serverSettings: ServerConnection.ISettings,
  init: RequestInit = {}
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
