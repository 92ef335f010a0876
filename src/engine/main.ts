/** Entry point of the bundled engine (`autoresearch …`). */
import { main } from './cli/cli';
import { SECRET_NAMES } from '../core/config/secrets';
import { exitAfterFlush } from './cli/exit-after-flush';
import { guardServicesCancellations } from './executor/services-guard';
import { guardOutput } from './cli/output-guard';
import { SecretsError, takeSecrets } from './executor/secrets';

function start(): void {
  // First of all: the secrets out of the environment (and /proc/self/environ) before anything can read it.
  try {
    takeSecrets(SECRET_NAMES);
  } catch (e) {
    if (!(e instanceof SecretsError)) throw e;
    process.stderr.write(`autoresearch: ${e.message}\n`);
    void exitAfterFlush(2);
    return;
  }
  guardServicesCancellations();
  // Before anything is printed: nothing a run, a journal or a model wrote reaches the terminal raw.
  guardOutput();
  void main(process.argv);
}

start();
