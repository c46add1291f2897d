import { invalid } from './problem.ts';

/**
 * Names people read to decide what something is (a file's name, a display name, a timeline's
 * or a session's name) must not hold characters that do not show: control characters, and
 * invisible format characters such as the bidi overrides and isolates ("\u202Egnp.exe" shows as
 * "exe.png"), zero-width spaces and the tag characters (which can hide text from a person that a
 * model still reads). Such a name is refused, never silently changed: the refusal names the
 * character, so the sender can see what was wrong. The zero-width joiner and non-joiner stay
 * allowed: emoji sequences and several scripts need them.
 */
const HIDDEN = /(?![\u200C\u200D])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

const NAMES: Record<number, string> = {
  0x00ad: 'SOFT HYPHEN',
  0x061c: 'ARABIC LETTER MARK',
  0x180e: 'MONGOLIAN VOWEL SEPARATOR',
  0x200b: 'ZERO WIDTH SPACE',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x2028: 'LINE SEPARATOR',
  0x2029: 'PARAGRAPH SEPARATOR',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE',
};

/** `U+202E (RIGHT-TO-LEFT OVERRIDE)`, or the kind of character when it has no name here. */
function describe(char: string): string {
  const code = char.codePointAt(0)!;
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  const name = NAMES[code] ?? (/\p{Cc}/u.test(char) ? 'a control character' : code >= 0xe0000 && code <= 0xe007f ? 'a tag character' : 'an invisible format character');
  return `${hex} (${name})`;
}

/** Why `name` may not be stored, or undefined when it may. */
export function hiddenCharacterProblem(name: string): string | undefined {
  const found = HIDDEN.exec(name);
  return found ? `contains ${describe(found[0])}, which does not show and can disguise the name; remove it` : undefined;
}

/** `name`, or a validation_failed on `field` naming the hidden character it holds. */
export function visibleName(field: string, name: string): string {
  const problem = hiddenCharacterProblem(name);
  if (problem) throw invalid({ [field]: [problem] });
  return name;
}
