/**
 * English messages for zod/mini. The schemas use zod/mini rather than zod's classic API so the
 * browser ships only the validators they use (classic zod is one ~380 KiB block to a bundler);
 * mini carries no messages of its own ("Invalid input" for everything) until a locale is set, and
 * the engine and the panel show zod's messages to people.
 *
 * Every module that builds a schema calls englishMessages() at its top, before any schema exists
 * (test/zod-mini.test.ts checks that). Not a bare `import './zod-english'` nor a re-export of z with
 * the call beside it: package.json declares our modules free of side effects, so webpack and
 * esbuild may drop a module whose own exports nobody uses, call and all. Calling a function the
 * module exports keeps it.
 */
import { config, locales } from 'zod/mini';

/** Sets zod's English messages, the ones classic zod installs by itself; a locale already set is kept. */
export function englishMessages(): void {
  if (!config().localeError) config(locales.en());
}
