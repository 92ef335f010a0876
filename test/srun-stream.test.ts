/**
 * What comes back from srun, split by SrunStream: srun's own lines and the queued job's id, the
 * guard's start marker (the job and node), the run's output, the end marker, the report; markers
 * split across chunks at every byte, and a forged marker without the nonce. Plus program.md's
 * slurm: setting and the srun options it makes.
 */
import { describe, expect, it } from 'vitest';
import { SrunStream } from '../src/engine/executor/slurm/srun-stream';
import { jobEndWords } from '../src/engine/executor/slurm/slurm-jobs';
import { parseProgram, resolveConfig } from '../src/core/config/program';
import { slurmArgProblem, slurmTimeMinutes, srunOptions } from '../src/core/config/slurm';

const NONCE = '0f1e2d3c-aaaa-bbbb-cccc-000000000001';
const START = `\0autoresearch-run-start ${NONCE} 4242 node7\0\n`;
const END = `\0autoresearch-run-end ${NONCE}\0`;
const REPORT = JSON.stringify({ sandbox: 'off', why: 'no bwrap', left: 0, exit_code: 0, signal: null }) + '\n';

function collect() {
  const seen = { log: '', queued: [] as string[], started: [] as string[] };
  const stream = new SrunStream(NONCE, {
    log: b => (seen.log += b.toString('utf8')),
    queued: id => seen.queued.push(id),
    started: (id, node) => seen.started.push(`${id}@${node}`),
  });
  return { seen, stream };
}

describe('SrunStream', () => {
  const stderr = `srun: job 4242 queued and waiting for resources\nsrun: job 4242 has been allocated resources\n${START}warn: lr high\n${END}${REPORT}`;
  const stdout = `step 1 loss 3.2\n---\nval_bpb: 1.234\n${END}`;

  it('splits srun lines, the start, the output, the end and the report, whole', () => {
    const { seen, stream } = collect();
    stream.stderr(Buffer.from(stderr));
    stream.stdout(Buffer.from(stdout));
    stream.close();
    expect(seen.queued).toEqual(['4242']);
    expect(seen.started).toEqual(['4242@node7']);
    expect(seen.log).toContain('srun: job 4242 queued and waiting for resources');
    expect(seen.log).toContain('warn: lr high');
    expect(seen.log).toContain('val_bpb: 1.234');
    expect(seen.log).not.toContain('autoresearch-run');
    expect(seen.log).not.toContain('"sandbox"');
    expect(stream.finished).toBe(true);
    expect(stream.reportLines().map(l => JSON.parse(l).exit_code)).toEqual([0]);
  });

  it('gives the same result with the streams cut at every byte', () => {
    const { seen, stream } = collect();
    for (const ch of Buffer.from(stderr)) stream.stderr(Buffer.from([ch]));
    for (const ch of Buffer.from(stdout)) stream.stdout(Buffer.from([ch]));
    stream.close();
    expect(seen.started).toEqual(['4242@node7']);
    expect(seen.queued).toEqual(['4242']);
    expect(seen.log.replace(/\n/g, '|')).toBe(
      'srun: job 4242 queued and waiting for resources|srun: job 4242 has been allocated resources|warn: lr high|step 1 loss 3.2|---|val_bpb: 1.234|',
    );
    expect(stream.finished).toBe(true);
  });

  it("does not take a run's forged marker (another nonce) for the guard's", () => {
    const { seen, stream } = collect();
    const forged = `\0autoresearch-run-end 00000000-0000-0000-0000-000000000000\0{"sandbox":"on","why":null,"left":0}\n`;
    stream.stderr(Buffer.from(`${START}${forged}more\n`));
    stream.stdout(Buffer.from('out\n'));
    stream.close();
    expect(stream.finished).toBe(false);
    expect(stream.reportLines()).toEqual([]);
    expect(seen.log).toContain('more');
  });

  it('keeps srun output that never reached a start (a refused submission) and names its error', () => {
    const { seen, stream } = collect();
    stream.stderr(Buffer.from('srun: error: Unable to allocate resources: Invalid partition name specified\n'));
    stream.close();
    expect(stream.running).toBe(false);
    expect(seen.log).toContain('Invalid partition');
    expect(stream.srunError()).toBe('srun: error: Unable to allocate resources: Invalid partition name specified');
  });
});

describe("program.md's slurm: setting", () => {
  it('becomes srun options in a fixed order, args last', () => {
    const fm = parseProgram(
      '---\nslurm:\n  partition: gpu\n  account: lab1\n  qos: high\n  gpus: 2\n  cpus: 8\n  mem: 64G\n  args: ["--constraint=a100", "--exclusive"]\n---\n',
    ).frontMatter;
    expect(srunOptions(resolveConfig(fm).slurm)).toEqual([
      '--partition=gpu',
      '--account=lab1',
      '--qos=high',
      '--gpus=2',
      '--cpus-per-task=8',
      '--mem=64G',
      '--constraint=a100',
      '--exclusive',
    ]);
  });

  it('refuses the options the engine sets, and names with spaces or shell characters', () => {
    expect(() => parseProgram('---\nslurm:\n  args: ["--time=5"]\n---\n')).toThrow(
      /--time is set by the engine .*leave it out of slurm.args/,
    );
    expect(() => parseProgram('---\nslurm:\n  args: ["-Jmine"]\n---\n')).toThrow(/-J is set by the engine/);
    expect(() => parseProgram('---\nslurm:\n  args: ["exclusive"]\n---\n')).toThrow(/is not an srun option/);
    expect(() => parseProgram('---\nslurm:\n  partition: "gpu; rm -rf ~"\n---\n')).toThrow(/must be a Slurm name/);
    expect(() => parseProgram('---\nslurm:\n  parition: gpu\n---\n')).toThrow(/unknown key "parition"/);
    expect(slurmArgProblem('--constraint=a100')).toBeNull();
  });

  it("sets the job's time limit from the deadline, in whole minutes past it", () => {
    expect(slurmTimeMinutes(600, 5)).toBe(12);
    expect(slurmTimeMinutes(10, 5)).toBe(2);
  });

  it('words each way Slurm ends a job, and nothing for a job that ended on its own', () => {
    const end = (state: string) => ({ state, reason: null, node: 'n1', timeLimit: '00:02:00' });
    expect(jobEndWords('7', end('TIMEOUT'))).toBe('Slurm ended job 7 on n1 at its time limit (--time 00:02:00)');
    expect(jobEndWords('7', end('CANCELLED'))).toMatch(/cancelled outside the engine/);
    expect(jobEndWords('7', end('PREEMPTED'))).toMatch(/preempted/);
    expect(jobEndWords('7', end('NODE_FAIL'))).toBe("job 7's node n1 failed");
    expect(jobEndWords('7', end('OUT_OF_MEMORY'))).toMatch(/more memory/);
    expect(jobEndWords('7', end('COMPLETED'))).toBeNull();
    expect(jobEndWords('7', end('FAILED'))).toBeNull();
  });
});
