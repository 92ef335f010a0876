/** Entry point of the bundled engine (`autoresearch …`). */
import { main } from './cli';

void main(process.argv);
