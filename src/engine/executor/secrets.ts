/**
 * The engine's secrets (the proposer's key, the Jupyter token: src/core/config/secrets.ts's SECRET_NAMES), held in memory
 * only. They arrive on a pipe (the server's engines: $AUTORESEARCH_SECRETS_FD names the fd) or in
 * the environment (`autoresearch run` from a shell). Either way they leave process.env, and, since
 * /proc/<pid>/environ shows a process's initial environment whatever process.env says, they are
 * also wiped from that memory in place: a training run without the sandbox, or a git hook it
 * planted, reads every process of its user there. The proposer, the kernel executor and the run
 * guard's secret hashes read them from here.
 */
import * as fs from 'node:fs';
import { isSecretName, SECRETS_FD_ENV } from '../../core/config/secrets';

const held = new Map<string, string>();

/** A one-line error the engine ends with (exit code 2): its secrets could not be taken. */
export class SecretsError extends Error {}

/**
 * Takes the secrets from the pipe and from the environment (names matching `names`) into memory,
 * and out of process.env and /proc/self/environ. Called once, first thing at start.
 */
export function takeSecrets(names: readonly string[]): void {
  const env = Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === 'string');
  for (const [name, value] of env) if (isSecretName(name, names)) held.set(name, value);
  // What the server hands over wins over what the environment held.
  for (const [name, value] of Object.entries(readPipe())) held.set(name, value);
  // A variable holding a secret's value under another name goes too (the run guard drops those from runs as well).
  const values = new Set(heldSecretValues().filter(v => v.length >= 8));
  const taken = env.filter(([name, value]) => isSecretName(name, names) || values.has(value)).map(([name]) => name);
  for (const name of taken) delete process.env[name];
  if (taken.length > 0) wipeInitialEnvironment(taken, values);
}

/** The secrets handed over on $AUTORESEARCH_SECRETS_FD; {} when there is none. */
function readPipe(): Record<string, string> {
  const fdText = process.env[SECRETS_FD_ENV];
  if (fdText === undefined) return {};
  delete process.env[SECRETS_FD_ENV];
  const where = `the secrets on fd ${fdText} (${SECRETS_FD_ENV})`;
  const fix = `start the engine from the Jupyter server, or without ${SECRETS_FD_ENV}`;
  const fd = Number(fdText);
  if (!Number.isInteger(fd) || fd < 3) throw new SecretsError(`${where} must name an fd above 2; ${fix}`);
  let text: string;
  try {
    text = fs.readFileSync(fd, 'utf8');
    fs.closeSync(fd);
  } catch (e) {
    throw new SecretsError(`${where} cannot be read (${(e as NodeJS.ErrnoException).code ?? e}); ${fix}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = null;
  }
  const ok =
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    Object.values(value).every(v => typeof v === 'string');
  if (!ok) throw new SecretsError(`${where} are not a JSON object of strings; ${fix}`);
  return value as Record<string, string>;
}

/**
 * Overwrites the `NAME=value` entries of `names` in this process's initial environment (the
 * memory /proc/self/environ reads, between the env_start and env_end of /proc/self/stat) with
 * NULs, through /proc/self/mem. libc's environ no longer points there once process.env dropped
 * them. Linux only: elsewhere there is no such file to read it back from, and nothing is done.
 */
function wipeInitialEnvironment(names: string[], values: Set<string>): void {
  let environ: Buffer;
  try {
    environ = fs.readFileSync('/proc/self/environ');
  } catch {
    return; // no /proc (macOS)
  }
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name (which may hold ')'): env_start and env_end are fields 50 and 51.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[47]);
    if (!(Number(fields[48]) - start === environ.length && start > 0))
      throw new Error('env_start/env_end do not match');
    const fd = fs.openSync('/proc/self/mem', 'r+');
    try {
      for (const e of entries(environ)) {
        if (names.includes(e.name)) fs.writeSync(fd, Buffer.alloc(e.end - e.at), 0, e.end - e.at, start + e.at);
      }
    } finally {
      fs.closeSync(fd);
    }
    const still = entries(fs.readFileSync('/proc/self/environ')).filter(
      e => names.includes(e.name) || values.has(e.value),
    );
    if (still.length > 0) throw new Error(`${still.map(e => e.name).join(', ')} still there`);
  } catch (e) {
    process.stderr.write(
      `autoresearch: warning: cannot clear ${names.join(', ')} from /proc/${process.pid}/environ (${(e as Error).message}); ` +
        'a training run without the sandbox could read them there; start the engine from the Jupyter server, which hands them over on a pipe\n',
    );
  }
}

/** The `NAME=value` entries of an environment block, with where each lies in it. */
function entries(block: Buffer): Array<{ name: string; value: string; at: number; end: number }> {
  const out = [];
  for (let at = 0; at < block.length;) {
    const nul = block.indexOf(0, at);
    const end = nul < 0 ? block.length : nul;
    const entry = block.subarray(at, end).toString('utf8');
    const eq = entry.indexOf('=');
    if (eq > 0) out.push({ name: entry.slice(0, eq), value: entry.slice(eq + 1), at, end });
    at = end + 1;
  }
  return out;
}

/** A secret's value, or undefined. */
export function secret(name: string): string | undefined {
  return held.get(name);
}

/** Every secret value held. */
export function heldSecretValues(): string[] {
  return [...held.values()];
}

/** `env` with the held secrets added: what a proposer's key check and default read. */
export function withSecrets(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...env, ...Object.fromEntries(held) };
}

/**
 * Runs `build` (synchronous: no child process can start meanwhile) with the held secrets back in
 * process.env, for a library that reads its configuration there (the Anthropic SDK's client:
 * ANTHROPIC_BASE_URL, ANTHROPIC_LOG, ANTHROPIC_CUSTOM_HEADERS…). They are set anew, so they never
 * reach /proc/self/environ, and are gone again when it returns.
 */
export function withSecretsInEnv<T>(build: () => T): T {
  const added = [...held.keys()].filter(name => process.env[name] === undefined);
  for (const name of added) process.env[name] = held.get(name);
  try {
    return build();
  } finally {
    for (const name of added) delete process.env[name];
  }
}
