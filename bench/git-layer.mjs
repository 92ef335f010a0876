#!/usr/bin/env node
// bench/git-layer: the engine's own git layer (a spawn per command, src/engine/git/exec.ts) against
// simple-git, the library one would reach for, on the commands one experiment makes.
//
// One "experiment" is the engine's sequence: status --porcelain, write train.py, add, commit,
// rev-parse HEAD, then reset --hard to the parent (a discard) — 6 git commands, 3 of them silent
// (add, commit -q and reset -q print nothing). Both sides run the same sequence on their own
// fresh repository, alternating, in this process. simple-git is not a dependency of the project:
// it is installed into a temporary folder for this benchmark only (it needs the npm registry).
// Prints each side's milliseconds per experiment and, last, `git_layer_ratio: X` = simple-git ÷ ours.
// A third side, `engine`, is the engine's own Repo (src/engine/git/git.ts, bundled in memory): the bare
// spawn plus what it adds per command (the guard against config a run planted: a few stats and a
// longer environment); `engine_overhead_ms_per_command` is that addition.
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const N = Number(process.env.BENCH_EXPERIMENTS ?? 30);

/** Runs git as the engine's exec does: its own process group, output collected, no waits. */
function ours(cwd) {
  return args =>
    new Promise((resolve, reject) => {
      const child = spawn('git', args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      const out = [];
      child.stdout.on('data', b => out.push(b));
      child.stderr.resume();
      child.on('error', reject);
      child.on('close', code =>
        code === 0 ? resolve(Buffer.concat(out).toString()) : reject(new Error(`git ${args[0]}`)),
      );
    });
}

function repo(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `bench-git-${name}-`));
  const git = (...a) => execFileSync('git', a, { cwd: dir });
  git('init', '-q', '-b', 'main');
  git('config', 'user.name', 'bench');
  git('config', 'user.email', 'bench@localhost');
  fs.writeFileSync(path.join(dir, 'train.py'), 'LR = 0\n');
  git('add', '-A');
  git('commit', '-qm', 'initial');
  return dir;
}

async function experiment(raw, dir, i) {
  await raw(['status', '--porcelain']);
  fs.writeFileSync(path.join(dir, 'train.py'), `LR = ${i}\n`);
  await raw(['add', '--', 'train.py']);
  await raw(['commit', '-q', '-m', `lr ${i}`]);
  await raw(['rev-parse', 'HEAD']);
  await raw(['reset', '-q', '--hard', 'HEAD~1']);
}

async function timed(fn) {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

const prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-simple-git-'));
execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', '--prefix', prefix, 'simple-git'], {
  stdio: 'inherit',
});
const { simpleGit } = createRequire(path.join(prefix, 'package.json'))('simple-git');
const version = JSON.parse(fs.readFileSync(path.join(prefix, 'node_modules', 'simple-git', 'package.json'))).version;

/** The engine's Repo class, from its TypeScript source (Node cannot import .ts). */
async function engineRepo() {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const out = await build({
    entryPoints: [path.join(root, 'src/engine/git/git.ts')],
    bundle: true,
    write: false,
    format: 'cjs',
    platform: 'node',
    logLevel: 'warning',
  });
  const mod = { exports: {} };
  new Function('module', 'exports', 'require', out.outputFiles[0].text)(
    mod,
    mod.exports,
    createRequire(import.meta.url),
  );
  return mod.exports.Repo;
}

const Repo = await engineRepo();
const mine = repo('ours');
const engineDir = repo('engine');
const engine = new Repo(engineDir);
const theirs = repo('simple-git');
const sg = simpleGit(theirs);
const sides = {
  ours: [ours(mine), mine],
  engine: [args => engine.raw(args), engineDir],
  'simple-git': [args => sg.raw(args), theirs],
};
const ms = { ours: 0, engine: 0, 'simple-git': 0 };
for (let i = 1; i <= N; i++) {
  for (const [name, [raw, dir]] of Object.entries(sides)) ms[name] += await timed(() => experiment(raw, dir, i));
}
console.log(`experiments: ${N} (6 git commands each, 3 silent); simple-git ${version}`);
console.log(`ours_ms_per_experiment: ${(ms.ours / N).toFixed(1)}`);
console.log(`engine_ms_per_experiment: ${(ms.engine / N).toFixed(1)}`);
console.log(`engine_overhead_ms_per_command: ${((ms.engine - ms.ours) / N / 6).toFixed(2)}`);
console.log(`simple_git_ms_per_experiment: ${(ms['simple-git'] / N).toFixed(1)}`);
console.log(`git_layer_ratio: ${(ms['simple-git'] / ms.ours).toFixed(2)}`);
