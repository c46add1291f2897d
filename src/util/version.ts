import { readFileSync } from 'node:fs';

/** The version in package.json, read once; the single source of truth for `acx --version`. */
export const ACX_VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
