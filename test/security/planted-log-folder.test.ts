/**
 * A run with the sandbox off (or an `auto` sandbox that lacks a user namespace) can write the
 * workspace's `.autoresearch/` folder. It swaps the logs folder for a link to a folder of its
 * choosing that holds a file under a finished run's log name: what the claude prompt reads of that
 * log (the crash's log tail, the loss curve, the final loss) is then read from nowhere but the
 * engine's own folder, since the text would go to the Messages API.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCurve } from '../../src/engine/proposers/claude/curve';
import { logFacts } from '../../src/engine/proposers/claude/facts';
import { readLogTail } from '../../src/engine/proposers/claude/prompt';

describe('a logs folder swapped for a link by a run', () => {
  it('is not read through: no crash tail, no curve, no loss from the folder it points to', () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-planted-logs-'));
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-planted-target-'));
    const secret = 'SECRET-KEY-MATERIAL\nstep 1 | loss 9.75 | 12 ms\nstep 2 | loss 8.5 | 12 ms\n';
    fs.writeFileSync(path.join(outside, '3.log'), secret);
    const state = path.join(ws, '.autoresearch', 't1');
    fs.mkdirSync(state, { recursive: true });
    fs.symlinkSync(outside, path.join(state, 'logs'));
    const log = path.join(state, 'logs', '3.log');
    // The control: the same file is read when the folder is the engine's own.
    const own = path.join(state, 'own', '3.log');
    fs.mkdirSync(path.dirname(own));
    fs.writeFileSync(own, secret);
    expect(readLogTail(own)).toContain('SECRET-KEY-MATERIAL');

    expect(readLogTail(log)).toBeNull();
    expect(runCurve(log)).toBeNull();
    expect(logFacts(log)).toEqual({ loss: null, device: null });
  });
});
