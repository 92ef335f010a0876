/**
 * Playwright global setup: a real run exported as a notebook, for the tests to open. The same
 * recipe as test/export.test.ts: a stand-in train.py in a temp git repository, three
 * experiments with the offline proposer (the third run crashes, so there is a log tail), then
 * `autoresearch export`. The notebook's path goes to the tests in AR_GALATA_NOTEBOOK.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cli, ENGINE, makeWorkspace, standInTrain } from '../test/helpers/workspace';

const PROGRAM = '---\nbudget_s: 1\ntimeout_s: 20\n---\n# Tune the stand-in\n\nMake val_bpb lower.\n';

/** train.py whose third run prints 40 lines and crashes. */
function crashingThirdRun(counterDir: string): string {
  const crash = [
    `_c = ${JSON.stringify(path.join(counterDir, 'runs'))}`,
    '_n = int(open(_c).read()) if os.path.exists(_c) else 0',
    'open(_c, "w").write(str(_n + 1))',
    'if _n == 2:',
    '    for i in range(40): print("line %d" % i)',
    '    print("RuntimeError: <stand-in> & boom", file=sys.stderr)',
    '    sys.exit(1)',
    ''
  ].join('\n');
  return standInTrain().replace('print("step 1', `${crash}print("step 1`);
}

export default async function globalSetup(): Promise<void> {
  if (!fs.existsSync(ENGINE)) {
    throw new Error(`no engine bundle at ${ENGINE}: run \`npm run build\` (or \`make setup\`) first`);
  }
  const counter = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-galata-count-'));
  const dir = makeWorkspace({ program: PROGRAM, train: crashingThirdRun(counter) });
  const run = await cli(['run', dir, '--tag', 't1', '--max-experiments', '3', '--proposer', 'offline']);
  if (run.code !== 0) {
    throw new Error(`autoresearch run failed:\n${run.stderr}`);
  }
  const exported = await cli(['export', dir]);
  if (exported.code !== 0) {
    throw new Error(`autoresearch export failed:\n${exported.stderr}`);
  }
  process.env.AR_GALATA_NOTEBOOK = path.join(dir, 't1.ipynb');
}
