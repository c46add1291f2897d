import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the reference implementation of the cartridge format (lboel/acx) is: every developer and
 * CI has it at ../shared/reference-acx beside the project (resolved from this file, not the
 * working directory); ACX_REFERENCE_DIR points at another checkout. Its CLI and library need no
 * npm install: they run on the project's Node (node:sqlite).
 */
const PROJECT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The commit test/fixtures/reference/ATTRIBUTION.md names, which the interop tests were written against. */
export const REFERENCE_COMMIT = '85f1358947a84dd5f82860aa69ae44648f84a675';

export const REFERENCE_DIR = resolve(PROJECT, process.env.ACX_REFERENCE_DIR ?? '../shared/reference-acx');

/** Undefined when the reference is there; otherwise what is missing and how to provide it. */
export function referenceMissing(): string | undefined {
  const cli = join(REFERENCE_DIR, 'src', 'cli.mjs');
  if (existsSync(cli)) return undefined;
  return `reference implementation not found at ${REFERENCE_DIR} (no src/cli.mjs): set ACX_REFERENCE_DIR to a checkout of https://github.com/lboel/acx at ${REFERENCE_COMMIT.slice(0, 12)}`;
}
