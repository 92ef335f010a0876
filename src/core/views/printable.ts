/**
 * Text from a training run, a journal, a log or a model, made safe to print: a terminal acts on
 * control characters (ESC starts a sequence that can clear the screen or write the clipboard with
 * OSC 52, \r overwrites a line, C1's \x9b is a CSI of its own), so each is shown as `\uXXXX`
 * instead. Everything else, \t and \n included, is left as it is. Inside a JSON string `\uXXXX`
 * is the character itself, so JSON printed through this parses to the same values.
 */

/** C0 controls but \t and \n, DEL, and C1 controls. */
// eslint-disable-next-line no-control-regex -- finding control characters is this regex's job
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** `text` with every control character but \t and \n written as a visible `\uXXXX`. */
export function printable(text: string): string {
  return text.replace(CONTROL, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
