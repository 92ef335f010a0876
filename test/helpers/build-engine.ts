/** Builds the engine bundle once before the tests, so CLI tests run exactly what users run. */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

export default function setup(): void {
  const root = path.resolve(__dirname, '..', '..');
  execFileSync(process.execPath, [path.join(root, 'scripts', 'build-engine.mjs')], { cwd: root, stdio: 'inherit' });
}
