/**
 * Playwright global setup: a real run exported as a notebook, for the tests to open. The same
 * recipe as test/export.test.ts: a stand-in train.py in a temp git repository, three
 * experiments with the offline proposer (the third run crashes, so there is a log tail), then
 * `autoresearch export`. The notebook's path goes to the tests in AR_GALATA_NOTEBOOK.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cli, crashingThirdRun, ENGINE, makeWorkspace, STAND_IN_PROGRAM as PROGRAM } from '../test/helpers/workspace';

export default async function globalSetup(): Promise<void> {
  if (!fs.existsSync(ENGINE)) {
    throw new Error(`no engine bundle at ${ENGINE}: run \`npm run build\` (or \`make setup\`) first`);
  }
  const counter = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-galata-count-'));
  const dir = makeWorkspace({ program: PROGRAM, train: crashingThirdRun(counter) });
  const run = await cli([
    'run',
    dir,
    '--tag',
    't1',
    '--max-experiments',
    '3',
    '--proposer',
    'offline',
    '--noise-runs',
    '1',
  ]); // the third run (experiment 2) crashes
  if (run.code !== 0) {
    throw new Error(`autoresearch run failed:\n${run.stderr}`);
  }
  const exported = await cli(['export', dir]);
  if (exported.code !== 0) {
    throw new Error(`autoresearch export failed:\n${exported.stderr}`);
  }
  process.env.AR_GALATA_NOTEBOOK = path.join(dir, 't1.ipynb');
}
