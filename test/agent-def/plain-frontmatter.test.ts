// The plain frontmatter reader is a fast path in front of the YAML library: wherever it answers,
// the answer must be YAML's, and the frontmatter real skills have must take it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { readPlainFrontmatter } from '../../src/agent-def/plain-frontmatter.ts';

const ROOT = join(import.meta.dirname, '../..');

const VALUES = [
  'Write release notes for the team.', 'Apache-2.0', 'a [b] {c}, d', "it's fine", 'say "hi"', 'C:\\path', 'a: b', 'a #b', 'a#b', 'a:b', 'x:',
  '-x', '- x', '?x', ':x', ',x', '[x]', '{x}', '#x', '&x', '*x', '!x', '|', '>', "'x'", '"x"', '%x', '@x', '`x`',
  '1', '1.5', '.5', '-1', '+1', '0x1F', '0o17', '1e3', '.inf', '-.inf', '.nan', '~', 'null', 'Null', 'NULL', 'true', 'True', 'FALSE', 'yes', 'no', 'on', 'off',
  '2nd place', 'x\ty', 'x\u00a0', '\u00a0x', 'x\u2028y', 'x\u0085y', 'é and ünïcode ✓', 'back\\slash', 'a  b   c', 'ends with spaces   ', 'x\r', 'x <<', '<<',
];
const KEYS = ['name', 'description', 'allowed-tools', 'x_y', 'null', 'true', 'constructor', 'toString', 'Name'];

/** Every frontmatter the corpus builds: single fields, pairs, repeats, blank and odd lines. */
function corpus(): string[] {
  const texts: string[] = ['', '   ', '\n\n'];
  for (const key of KEYS) for (const value of VALUES) texts.push(`${key}: ${value}`, `${key}:   ${value}`);
  for (const value of VALUES) texts.push(`name: n\ndescription: ${value}\n`, `name: n\r\ndescription: ${value}\r\n`, `name: n\n\n  \ndescription: ${value}`);
  texts.push('name: a\nname: b', 'name: a\n# comment\ndescription: d', 'name: a\nmetadata:\n  version: 1.0.0', 'name: a\n  description: d', '\tname: a', 'name:\ta', 'name:a',
    '---', 'name: a\n---', '%YAML 1.2', 'name: |\n  body', 'name: >\n  body', 'name: a\n...', '? name\n: a', 'name: a # trailing comment');
  return texts;
}

function yamlOrError(text: string): unknown {
  try {
    return parseYaml(text);
  } catch {
    return 'YAML refuses it';
  }
}

describe('the plain frontmatter reader', () => {
  it('answers exactly as YAML does wherever it answers', () => {
    let answered = 0;
    for (const text of corpus()) {
      const plain = readPlainFrontmatter(text);
      if (plain === undefined) continue;
      answered += 1;
      expect(plain, JSON.stringify(text)).toEqual(yamlOrError(text));
    }
    expect(answered).toBeGreaterThan(100); // the fast path is taken, not only declined
  });

  it('leaves to YAML what it is not sure of', () => {
    for (const text of ['name: a\nname: b', 'name: 1.0', 'name: true', 'name: ~', 'name: a: b', 'name: a # c', "name: 'a'", 'name: a\nmetadata:\n  v: x', 'null: a', 'name: a\tb', 'name: a\u2028b', '']) {
      expect(readPlainFrontmatter(text), JSON.stringify(text)).toBeUndefined();
    }
  });

  it('takes the frontmatter of every skill in the examples and fixtures that is plain lines', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir)) {
        const path = join(dir, entry);
        if (statSync(path).isDirectory()) walk(path);
        else if (entry === 'SKILL.md') files.push(path);
      }
    };
    walk(join(ROOT, 'examples'));
    walk(join(ROOT, 'test/fixtures'));
    let plain = 0;
    for (const file of files) {
      const front = /^---\r?\n([\s\S]*?)\r?\n---/.exec(readFileSync(file, 'utf8'))?.[1] ?? '';
      const read = readPlainFrontmatter(front);
      if (read !== undefined) {
        plain += 1;
        expect(read, file).toEqual(parseYaml(front));
      }
    }
    expect(plain).toBeGreaterThanOrEqual(2); // the notes-keeper examples' skills
  });
});
