// Checks that run once after every test file (registered by test/support/setup-env.ts): a support
// module that watches something across a whole file (every answer of the test platform, say)
// registers one here, and the file fails when it finds something wrong, whichever test caused it.
type FileCheck = () => string[];

const checks = new Map<string, FileCheck>();

/** Runs `check` after the file's last test; what it returns is what went wrong (empty: nothing). */
export function registerFileCheck(name: string, check: FileCheck): void {
  checks.set(name, check);
}

export function runFileChecks(): void {
  const counts = new Map<string, number>();
  for (const [name, check] of checks) for (const problem of check()) counts.set(`${name}: ${problem}`, (counts.get(`${name}: ${problem}`) ?? 0) + 1);
  const problems = [...counts].map(([problem, n]) => (n > 1 ? `${problem} (${n} times)` : problem));
  if (problems.length > 0) throw new Error(`After this file's tests:\n${problems.join('\n')}`);
}
