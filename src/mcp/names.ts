import { createHash } from 'node:crypto';

/**
 * Bridged tool names are `<server>__<tool>`, fitted to the tool-name pattern
 * ^[A-Za-z0-9_-]{1,64}$ that every model API accepts. Characters outside it become `_`; a name
 * that is too long, or that collides with one already taken, gets a short hash of the original
 * so that it stays unique and stable across runs.
 */
const MAX = 64;

function hash6(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 6);
}

export function bridgedToolName(server: string, tool: string, taken: Set<string> = new Set()): string {
  const original = `${server}__${tool}`;
  let name = original.replace(/[^A-Za-z0-9_-]/g, '_');
  if (name.length > MAX || taken.has(name)) {
    const suffix = `_${hash6(original)}`;
    name = name.slice(0, MAX - suffix.length) + suffix;
  }
  // A second collision is astronomically unlikely; count up rather than loop on hashes.
  for (let i = 2; taken.has(name); i++) name = `${name.slice(0, MAX - String(i).length - 1)}_${i}`;
  taken.add(name);
  return name;
}
