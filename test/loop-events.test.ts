/** The engine's events are typed: a listener for a misspelt event, or with wrong arguments, does not compile. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');

/** The compiler's errors (`line: message`) for a file that uses the Loop, checked with the project's options. */
function errorsOf(code: string): string[] {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-events-')), 'use.ts');
  fs.writeFileSync(file, code.replace(/LOOP/g, JSON.stringify(path.join(ROOT, 'src', 'engine', 'run', 'setup'))));
  const { config } = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT);
  const program = ts.createProgram([file], { ...options, noEmit: true, rootDir: undefined });
  return ts
    .getPreEmitDiagnostics(program)
    .filter(d => d.file?.fileName === file)
    .map(d => {
      const line = d.file!.getLineAndCharacterOfPosition(d.start ?? 0).line + 1;
      return `${line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
}

describe('Loop events', () => {
  it('listeners compile against the event map, and a misspelt event or a wrong argument does not', () => {
    const errors = errorsOf(`
      import { Loop } from LOOP;
      declare const l: Loop;
      l.on('phase', (n, phase, description, worker) => [n.toFixed(), phase.toUpperCase(), description, worker]);
      l.on('experiment', r => r.status);
      l.on('note', text => text.length);
      l.on('phsae', () => undefined);
      l.on('phase', (_n: number, _phase: number) => undefined);
    `);
    // Lines 7 and 8: the misspelt event (its listener may be nothing), the phase taken as a number.
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/^7: .*never/);
    expect(errors[1]).toMatch(/^8: .*number/);
  }, 60_000);
});
