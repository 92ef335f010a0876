/** What the benchmarks share: a throwaway workspace in a git repository, and a free port. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * A train.py that "trains" by sleeping, then prints a random metric: the run's cost is known, so
 * what a benchmark measures on top of it is overhead. Its constants give the offline proposer moves.
 */
export function sleepTrain(seconds) {
  return `import random, time
LEARNING_RATE = 0.001
WEIGHT_DECAY = 0.1
N_LAYER = 4
BATCH_SIZE = 16
N_EMBD = 128
SEQ_LEN = 256
WARMUP_STEPS = 30
DROPOUT = 0.1
time.sleep(${seconds})
print("---")
print(f"val_bpb:          {random.uniform(0.9, 1.1):.6f}")
print("peak_vram_mb:     1024.0")
`;
}

/** A temp workspace with program.md, prepare.py and the given train.py, committed on main. */
export function benchWorkspace(name, { train, budgetS, timeoutS, gitignore }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ar-bench-${name}-`));
  const timeout = timeoutS ? `timeout_s: ${timeoutS}\n` : '';
  fs.writeFileSync(path.join(dir, 'program.md'), `---\nbudget_s: ${budgetS}\n${timeout}---\nLower val_bpb.\n`);
  fs.writeFileSync(path.join(dir, 'prepare.py'), '# fixed\n');
  fs.writeFileSync(path.join(dir, 'train.py'), train);
  if (gitignore) {
    fs.writeFileSync(path.join(dir, '.gitignore'), gitignore);
  }
  const git = (...a) => execFileSync('git', a, { cwd: dir });
  git('init', '-q', '-b', 'main');
  git('config', 'user.name', 'bench');
  git('config', 'user.email', 'bench@localhost');
  git('add', '-A');
  git('commit', '-qm', 'initial');
  return dir;
}

/** A TCP port free on 127.0.0.1 at the time of asking. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The real Python interpreter, not a launcher (pyenv's shim costs ~90 ms a start). */
export function realPython() {
  return execFileSync(process.env.AUTORESEARCH_PYTHON ?? 'python3', ['-c', 'import sys; print(sys.executable)'], {
    encoding: 'utf8',
  }).trim();
}

/** Every record of a run's journal, `.autoresearch/<tag>/journal.jsonl`, parsed. */
export function readJournal(dir, tag) {
  const text = fs.readFileSync(path.join(dir, '.autoresearch', tag, 'journal.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter(l => l.trim() !== '')
    .map(l => JSON.parse(l));
}

/**
 * The strict rule, one run per experiment: the overhead, executor and pipeline benchmarks
 * measure what the engine adds around a run, so each side must run the same number of runs
 * (the noise-aware rule's repeats depend on the random metric; bench/noise.mjs measures them).
 */
export const ONE_RUN_EACH = ['--noise-runs', '1'];
