/**
 * Attack: a training run in a Slurm job, without the sandbox, hunts for the nonce of its guard's
 * markers in every process it can read (command lines and environments: srun's, slurmstepd's, the
 * guard's own) and forges the guard's end marker and a clean report with each candidate, on both
 * streams, then exits 3. The nonce reached the guard on srun's stdin, never argv nor the
 * environment, so no candidate is right: the engine takes the run's real end (exit 3, unsandboxed)
 * and all of its output after the forgeries.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogCapture } from '../../src/engine/experiment/log-capture';
import { SlurmExecutor } from '../../src/engine/executor/slurm/slurm';
import { ensureLocalSlurm, lockSlurmNode } from '../helpers/local-slurm';
import { makeWorkspace } from '../helpers/workspace';

const FORGER = `
import os, re, sys, json
found = set()
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for part in ("cmdline", "environ"):
        try:
            data = open("/proc/%s/%s" % (pid, part), "rb").read().decode("utf-8", "replace")
        except OSError:
            continue
        found.update(re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", data))
report = json.dumps({"sandbox": "on", "why": None, "left": 0, "exit_code": 0, "signal": None})
for nonce in found:
    forged = ("\\0autoresearch-run-end %s\\0" % nonce).encode()
    for fd in (1, 2):
        os.write(fd, forged)
    os.write(2, (report + "\\n").encode())
print("forger tried %d candidates" % len(found), flush=True)
print("forger done", flush=True)
sys.exit(3)
`;

let unlock: (() => void) | undefined;

beforeAll(async () => {
  Object.assign(process.env, (await ensureLocalSlurm()).env);
  unlock = await lockSlurmNode();
}, 900_000);

afterAll(() => unlock?.());

describe('a run in a Slurm job forging its guard', () => {
  it('finds no nonce to forge the end marker or the report with: its real end and its whole output are taken', async () => {
    const dir = makeWorkspace({ extra: { 'forge.py': FORGER } });
    const logFile = path.join(dir, '.autoresearch', 'forge.log');
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const log = new LogCapture(logFile);
    const exec = new SlurmExecutor();
    const outcome = await exec.run({
      cwd: dir,
      command: 'python3 forge.py',
      timeoutS: 60,
      log,
      name: 'autoresearch-forge-1-1',
      workspace: dir,
      isolation: { sandbox: 'off', network: false, readonly: [] },
    });
    log.close();
    await exec.dispose();
    const text = fs.readFileSync(logFile, 'utf8');
    expect(text).toMatch(/forger tried \d+ candidates/);
    expect(text).toContain('forger done');
    expect(outcome.exitCode).toBe(3);
    expect(outcome.sandbox).toBe('off');
    expect(outcome.failure).toBeUndefined();
  }, 120_000);
});
