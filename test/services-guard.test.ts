/**
 * The engine's guard against @jupyterlab/services' one uncaught rejection, in a real Node process:
 * that rejection is ignored, any other still ends the process with the error, as Node's default.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { isServicesCancellation } from '../src/engine/executor/services-guard';
import { ROOT } from './helpers/workspace';

/** Runs a script that installs the guard, then leaves `rejection` unhandled; returns how it ended. */
async function runWithGuard(rejection: string): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-guard-'));
  const entry = path.join(dir, 'entry.ts');
  fs.writeFileSync(
    entry,
    `import { guardServicesCancellations } from ${JSON.stringify(path.join(ROOT, 'src/engine/executor/services-guard'))};\n` +
      `guardServicesCancellations();\nvoid Promise.reject(new Error(${JSON.stringify(rejection)}));\n` +
      `setTimeout(() => console.log('still running'), 100);\n`,
  );
  const out = path.join(dir, 'entry.cjs');
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    outfile: out,
    logLevel: 'silent',
  });
  const r = spawnSync(process.execPath, [out], { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe('the services guard', () => {
  it('lets a canceled kernel_info request pass and the engine go on', async () => {
    const r = await runWithGuard('Canceled future for kernel_info_request message before replies were done');
    expect(r).toMatchObject({ code: 0, stdout: 'still running\n' });
  });

  it('still ends the process on any other unhandled rejection', async () => {
    const r = await runWithGuard('something else went wrong');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('something else went wrong');
    expect(r.stdout).toBe('');
  });

  it('matches only the services message', () => {
    expect(
      isServicesCancellation(new Error('Canceled future for execute_request message before replies were done')),
    ).toBe(true);
    expect(isServicesCancellation(new Error('Canceled future for kernel_info_request'))).toBe(false);
    expect(isServicesCancellation('Canceled future for kernel_info_request message before replies were done')).toBe(
      false,
    );
  });
});
