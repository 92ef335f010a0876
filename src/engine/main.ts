/** Entry point of the bundled engine (`autoresearch …`). */
import { main } from './cli';
import { guardServicesCancellations } from './executor/services-guard';
import { guardOutput } from './output-guard';

guardServicesCancellations();
// Before anything is printed: nothing a run, a journal or a model wrote reaches the terminal raw.
guardOutput();
void main(process.argv);
