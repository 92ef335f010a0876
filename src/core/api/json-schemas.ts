/**
 * The REST responses (./responses.ts) as JSON Schema (draft-07, as the journal's are): the build
 * writes them to engine/rest.schema.json, one schema per response by name, which the Python tests
 * check a real server's answers against. Only the build imports this file.
 */
import * as z from 'zod/mini';
import { englishMessages } from '../journal/zod-english';
import { REST_RESPONSES } from './responses';

englishMessages();

/** Each response's JSON Schema, by its name in REST_RESPONSES. `io: 'input'`: the experiments are journal records as the server reads them from disk. */
export function restSchemas(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(REST_RESPONSES).map(([name, schema]) => [
      name,
      z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'throw' }),
    ]),
  );
}
