/** The stand-in's HTTP plumbing: reading a body (with the API's size limit), writing, waiting, error statuses. */
import type * as http from 'node:http';
import { ApiError } from './messages-validate';

const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** Waits ms, on a timer the server clears when it closes. */
export function sleep(ms: number, timers: Set<NodeJS.Timeout>): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise(resolve => {
    const t = setTimeout(() => {
      timers.delete(t);
      resolve();
    }, ms);
    timers.add(t);
  });
}

/** The HTTP status the API uses for an error type. */
export function statusOf(errorType: string): number {
  switch (errorType) {
    case 'invalid_request_error':
      return 400;
    case 'authentication_error':
      return 401;
    case 'permission_error':
      return 403;
    case 'not_found_error':
      return 404;
    case 'request_too_large':
      return 413;
    case 'rate_limit_error':
      return 429;
    case 'overloaded_error':
      return 529;
    default:
      return 500;
  }
}

export function write(res: http.ServerResponse, data: string): Promise<void> {
  return new Promise(resolve => {
    res.write(data, () => resolve());
  });
}

export function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else parts.push(chunk);
    });
    req.on('end', () =>
      tooLarge
        ? reject(new ApiError(413, 'request_too_large', 'Request exceeds the maximum allowed number of bytes.'))
        : resolve(Buffer.concat(parts).toString('utf8')),
    );
    req.on('error', reject);
  });
}
