/**
 * A journal the engine cannot write (made read-only, replaced by a folder, a full disk) ends the
 * run with one line naming the file and the fix, never a stack trace; and nothing is lost: the
 * journal has no half record, results.tsv and git agree with it, and the experiment the failure
 * cut short is recorded on --resume, never left kept without its record.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJournal } from '../../src/core/journal/journal';
import { belongsInResults } from '../../src/core/journal/results';
import { JournalStore } from '../../src/engine/store/journal-store';
import { resolvePython } from '../../src/engine/workspace/python';
import { UserError } from '../../src/engine/user-error';
import {
  ENGINE,
  experiments,
  finished,
  git,
  journal,
  makeWorkspace,
  waitFor,
  type CliResult,
} from '../helpers/workspace';

/** As root, the engine runs as nobody so file modes hold; anyone else runs it as themselves. */
const ROOT = process.getuid?.() === 0;
const NOBODY = 65534;

/** The baseline measures at once; every experiment trains for 3 s, time to spoil the journal meanwhile. */
const TRAIN = [
  'import time',
  'LEARNING_RATE = 0.001',
  'N_LAYER = 4',
  'if (LEARNING_RATE, N_LAYER) != (0.001, 4):',
  '    time.sleep(3)',
  'print("---")',
  'print("val_bpb: %.6f" % (1.0 + abs(LEARNING_RATE - 0.001) + abs(N_LAYER - 4) * 0.01))',
  '',
].join('\n');

/** A Python nobody may run (root's own, under /root, is out of its reach). */
const PYTHON = ['/usr/bin/python3', '/usr/local/bin/python3'].find(p => fs.existsSync(p)) ?? resolvePython();

/**
 * The engine bundle where nobody can read it: a clone may lie under a folder only root may enter
 * (mktemp -d makes one 0700), so nobody runs a copy of the same file.
 */
let nobodysEngine: string | null = null;
function engineFor(unprivileged: boolean): string {
  if (!unprivileged || !ROOT) return ENGINE;
  if (nobodysEngine === null) {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-engine-'));
    fs.chmodSync(folder, 0o755);
    nobodysEngine = path.join(folder, path.basename(ENGINE));
    fs.copyFileSync(ENGINE, nobodysEngine);
    fs.chmodSync(nobodysEngine, 0o755);
  }
  return nobodysEngine;
}

/** The CLI, as nobody when the tests run as root (setpriv: root would ignore a read-only file). */
function cliAs(unprivileged: boolean, args: string[], home: string): Promise<CliResult> {
  const env = { ...process.env, HOME: home };
  const command = [
    process.execPath,
    engineFor(unprivileged),
    ...args,
    ...(args[0] === 'run' ? ['--python', PYTHON] : []),
  ];
  const child =
    unprivileged && ROOT
      ? spawn('setpriv', ['--reuid', `${NOBODY}`, '--regid', `${NOBODY}`, '--clear-groups', ...command], { env })
      : spawn(command[0], command.slice(1), { env });
  return finished(child);
}

/** A workspace (and a home) the engine's user owns. */
function workspaceFor(unprivileged: boolean): { dir: string; home: string } {
  const dir = makeWorkspace({
    train: TRAIN,
    program: `---\nbudget_s: 1\ntimeout_s: 20\nrun: ${PYTHON} train.py\n---\nLower val_bpb.\n`,
  });
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-home-'));
  if (unprivileged && ROOT) {
    for (const p of [dir, home]) fs.chmodSync(p, 0o755);
    chownTree(dir, NOBODY);
    fs.chownSync(home, NOBODY, NOBODY);
  }
  return { dir, home };
}

function chownTree(p: string, uid: number): void {
  fs.lchownSync(p, uid, uid);
  if (fs.lstatSync(p).isDirectory()) for (const e of fs.readdirSync(p)) chownTree(path.join(p, e), uid);
}

const spoilers = {
  'made read-only (the engine not root)': {
    unprivileged: true,
    spoil: (file: string) => fs.chmodSync(file, 0o444),
    mend: (file: string) => fs.chmodSync(file, 0o644),
    words: /permission denied; make it and its folder writable by the engine's user/,
  },
  'replaced by a folder (the engine root)': {
    unprivileged: false,
    spoil: (file: string) => {
      fs.renameSync(file, `${file}.aside`);
      fs.mkdirSync(file);
    },
    mend: (file: string) => {
      fs.rmdirSync(file);
      fs.renameSync(`${file}.aside`, file);
    },
    words: /it is a folder/,
  },
};

describe('an unwritable journal', () => {
  for (const [how, s] of Object.entries(spoilers)) {
    it(`a journal ${how} mid-experiment ends the run with one line naming it and --resume; nothing is lost, the experiment is recorded on resume`, async () => {
      const { dir, home } = workspaceFor(s.unprivileged);
      const file = path.join(dir, '.autoresearch', 'u', 'journal.jsonl');
      const run = cliAs(s.unprivileged, ['run', dir, '--tag', 'u', '--proposer', 'offline', '--noise-runs', '1'], home);
      // Spoiled once experiment #1 is under way: its run record is the next append.
      await waitFor(
        () =>
          fs.existsSync(file) &&
          parseJournal(fs.readFileSync(file, 'utf8')).some(r => r.type === 'experiment_start' && r.n === 1),
        60_000,
        'experiment #1 to start',
      );
      s.spoil(file);
      const r = await run;
      expect(r.code, r.stderr).toBe(1);
      const lines = r.stderr.split('\n').filter(Boolean);
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^autoresearch: cannot write the journal ${file}: `));
      expect(lines[0]).toMatch(s.words);
      expect(lines[0]).toMatch(/, then continue the run with --resume --tag u$/);
      s.mend(file);

      // Nothing half-written, nothing recorded of #1; results.tsv has the journal's rows; #1's commit is not kept.
      const records = journal(dir, 'u');
      expect(fs.readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
      expect(records.at(-1)).toMatchObject({ type: 'experiment_start', n: 1 });
      expect(experiments(dir, 'u').map(e => e.n)).toEqual([0]);
      const rows = () => fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8').trim().split('\n').slice(1);
      expect(rows()).toHaveLength(1);
      const baseline = experiments(dir, 'u')[0].commit as string;
      // #1 was committed when its record could not be written: the branch is on a commit nobody judged yet.
      const cut = git(dir, '-c', 'safe.directory=*', 'rev-parse', 'autoresearch/u').trim();
      expect(cut).not.toBe(baseline);

      const resumed = await cliAs(
        s.unprivileged,
        ['run', dir, '--tag', 'u', '--resume', '--proposer', 'offline', '--noise-runs', '1', '--max-experiments', '1'],
        home,
      );
      expect(resumed.code, resumed.stderr).toBe(0);
      // Recorded on resume, with its commit; results.tsv has every record's row; the branch ends on the best.
      const after = experiments(dir, 'u');
      expect(after.slice(0, 2).map(e => [e.n, e.commit])).toEqual([
        [0, baseline],
        [1, cut],
      ]);
      expect(rows()).toHaveLength(after.filter(e => belongsInResults(e.status)).length);
      const kept = after.filter(e => e.status === 'keep').at(-1);
      expect(git(dir, '-c', 'safe.directory=*', 'rev-parse', 'autoresearch/u').trim()).toBe(kept?.commit);
      expect(git(dir, '-c', 'safe.directory=*', 'status', '--porcelain')).toBe('');
    });
  }

  it('a journal that is a folder stops status and --resume with one line naming it, no stack', async () => {
    const dir = makeWorkspace();
    fs.mkdirSync(path.join(dir, '.autoresearch', 'd', 'journal.jsonl'), { recursive: true });
    for (const args of [
      ['status', dir, '--tag', 'd'],
      ['run', dir, '--tag', 'd', '--resume', '--proposer', 'offline'],
    ]) {
      const r = await cliAs(false, args, os.homedir());
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/^autoresearch: cannot read the journal \S+journal\.jsonl: it is a folder; [^\n]+\n$/);
    }
  });

  it('a full disk (ENOSPC) is a one-line error naming the journal and the fix; the journal keeps no half record', () => {
    // A real full disk: a tmpfs of 16 KiB (the tests run as root, as CI does), filled but for a few bytes.
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k', 'tmpfs', root]);
    try {
      const file = path.join(root, 'journal.jsonl');
      const store = new JournalStore(file);
      const record = {
        type: 'review' as const,
        ts: new Date().toISOString(),
        n: 1,
        event: 'mode' as const,
        step: true,
      };
      store.append(record);
      const fill = fs.openSync(path.join(root, 'fill'), 'w');
      try {
        for (;;) fs.writeSync(fill, Buffer.alloc(1024));
      } catch {
        // full
      } finally {
        fs.closeSync(fill);
      }
      let error: unknown;
      try {
        for (let i = 0; i < 64; i++) store.append({ ...record, n: i + 2 });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(UserError);
      expect((error as Error).message).toMatch(
        /^cannot write the journal \S+journal\.jsonl: the disk is full; free some space/,
      );
      // Every record in the journal is whole: it parses, and none is torn.
      const text = fs.readFileSync(file, 'utf8');
      expect(text.endsWith('\n')).toBe(true);
      expect(store.read().length).toBe(text.split('\n').length - 1);
    } finally {
      execFileSync('umount', [root]);
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('a state.json that cannot be replaced (a folder in its place) is one line naming it; the record is in the journal', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-state-'));
    const state = path.join(root, 'state.json');
    fs.mkdirSync(path.join(state, 'x'), { recursive: true });
    const store = new JournalStore(path.join(root, 'journal.jsonl'), { file: state, tag: 's' });
    const record = { type: 'review' as const, ts: new Date().toISOString(), n: 1, event: 'mode' as const, step: true };
    expect(() => store.append(record)).toThrow(
      new UserError(
        `cannot write the run's state ${state}: it is a folder; move the folder out of the way, then continue the run with --resume --tag s`,
      ),
    );
    expect(store.read()).toEqual([record]);
  });
});
