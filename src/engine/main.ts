/** Entry point of the bundled engine (`autoresearch …`). */
import { main } from './cli';
import { guardServicesCancellations } from './executor/services-guard';

guardServicesCancellations();
void main(process.argv);
