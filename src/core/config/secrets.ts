/**
 * The environment variables that hold secrets, declared once: the engine takes them out of its
 * environment and keeps them from every training run (src/engine/executor), and the server hands
 * them to the engine on a pipe instead of in its environment. The server cannot import this file:
 * the build writes `secretRules()` to engine/rules.json, which supervise/secrets.py reads.
 * Browser-safe (no node: imports).
 */
import { INFO, PROPOSER_NAMES } from './proposers';

/** The Jupyter server's and JupyterHub's credentials, and the engine's own token for the server. */
export const SERVER_SECRET_NAMES = [
  'JUPYTER_TOKEN',
  'JUPYTER_PASSWORD',
  'JPY_API_TOKEN',
  'JUPYTERHUB_API_TOKEN',
  'AUTORESEARCH_TOKEN',
] as const;

/** Whether `name` is one of `names` (a trailing `_` names a prefix). */
export function isSecretName(name: string, names: readonly string[]): boolean {
  return names.some(s => (s.endsWith('_') ? name.startsWith(s) : name === s));
}

/**
 * Every secret's name (a trailing `_` names a prefix): each proposer's secretEnv and keyEnv, then
 * the server's. A name a prefix already covers is left out, so the list reads as the rule.
 */
export const SECRET_NAMES: readonly string[] = (() => {
  const prefixes = PROPOSER_NAMES.flatMap(n => INFO[n].secretEnv).filter(s => s.endsWith('_'));
  const named = [...PROPOSER_NAMES.flatMap(n => [...INFO[n].secretEnv, ...INFO[n].keyEnv]), ...SERVER_SECRET_NAMES];
  const names = named.filter(s => s.endsWith('_') || !isSecretName(s, prefixes));
  return [...new Set(names)];
})();

/** Names the fd the server hands the engine's secrets on (a JSON object of strings, read to its end). */
export const SECRETS_FD_ENV = 'AUTORESEARCH_SECRETS_FD';

/** The rules as engine/rules.json holds them for the server (snake_case, like layout.json). */
export function secretRules() {
  return { secret_names: SECRET_NAMES, secrets_fd_env: SECRETS_FD_ENV };
}
