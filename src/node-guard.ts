import { readFileSync } from 'node:fs';

/**
 * acx needs node:sqlite with FTS5, which Node.js has from 22.13 on — the version package.json's
 * "engines" names (the one place it is stated). Imported first by the library's entry, so an
 * older Node says exactly that instead of failing somewhere inside. (bin/acx.js checks the same
 * for the CLI before it loads anything.)
 */
export function requiredNode(): [major: number, minor: number] {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { engines?: { node?: string } };
  const [, major, minor] = /(\d+)\.(\d+)/.exec(manifest.engines?.node ?? '') ?? [];
  return [Number(major ?? 22), Number(minor ?? 13)];
}

/** The problem with this Node.js, or undefined when it will do. */
export function nodeVersionProblem(version: string = process.versions.node): string | undefined {
  const [major, minor] = version.split('.').map(Number) as [number, number];
  const [needMajor, needMinor] = requiredNode();
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return `acx needs Node.js ${needMajor}.${needMinor} or newer (for node:sqlite); this is Node.js v${version}. Install Node.js ${needMajor}.${needMinor} or newer to use acx.`;
}

const problem = nodeVersionProblem();
if (problem) throw new Error(problem);
