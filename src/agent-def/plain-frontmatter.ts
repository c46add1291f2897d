/**
 * A fast path for the frontmatter most SKILL.md files have: `key: text` lines and nothing else.
 * It reads them without the YAML library (some 70 modules, about 15 ms of a run's start-up) and
 * gives exactly what YAML would; anything it is not sure of (quotes, nesting, comments, block
 * scalars, a repeated key, a value YAML reads as a number, boolean or null) returns undefined, and
 * the caller parses the text as YAML.
 */
const KEY_AND_VALUE = /^([A-Za-z][A-Za-z0-9_-]*): +(\S.*)$/;
// A plain scalar may not start with a YAML indicator; `:` and `#` anywhere could end it early
// (`a: b`, ` # comment`), so a value holding either goes to YAML.
// Control characters, and what YAML might read as a line break or byte-order mark, go to YAML too.
const PLAIN_TEXT = /^[^-?:,[\]{}#&*!|>'"%@`\s][^:#\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]*$/;
// What YAML 1.2's core schema (the yaml package's default) reads as other than a string starts
// with a digit, sign, dot or tilde, or is one of these words; all of it is left to YAML.
const NOT_A_STRING = /^(?:[-+.~\d]|(?:null|true|false)$)/i;

export function readPlainFrontmatter(text: string): Record<string, string> | undefined {
  const fields: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (/^ *$/.test(line)) continue;
    const match = KEY_AND_VALUE.exec(line);
    if (!match) return undefined;
    const [, key, raw] = match as unknown as [string, string, string];
    const value = raw.replace(/ +$/, ''); // YAML's trailing white space; a tab goes to YAML below
    if (Object.hasOwn(fields, key) || NOT_A_STRING.test(key) || !PLAIN_TEXT.test(value) || NOT_A_STRING.test(value)) return undefined;
    fields[key] = value;
  }
  // No fields at all is YAML's null, not an empty mapping.
  return Object.keys(fields).length > 0 ? fields : undefined;
}
