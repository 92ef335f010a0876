/**
 * The zod schemas the Python side validates against, as JSON Schema (draft-07, which the
 * server's compiled validator speaks): a journal record and a run's state.json. The build writes
 * them beside the engine bundle (scripts/build-engine.mjs), so the server, load() and watch()
 * check exactly what the engine writes, with no hand-kept copy. Only the build imports this file.
 */
import * as z from 'zod/mini';
import { JournalRecord } from './journal';
import { RunStateFile } from './run-state';
import { englishMessages } from './zod-english';

englishMessages();

/** The JSON Schemas by file name. `io: 'input'`: what may be on disk, as zod's parse accepts it. */
export function jsonSchemas(): Record<string, unknown> {
  const of = (schema: z.ZodMiniType) =>
    z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'throw' });
  return {
    'journal-record.schema.json': of(JournalRecord),
    'run-state.schema.json': of(RunStateFile),
  };
}
