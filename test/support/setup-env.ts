// Runs in every test worker before its file. `npm test` marks the environment it starts vitest in
// (npm_command=run-script); the CLI reads that mark to print its own name as `npx acx`
// (src/frontends/cli/self-name.ts). Tests start from no mark, so `npm test` and `npx vitest`
// see the same output; a test about the mark sets it itself.
import { afterAll } from 'vitest';
import { runFileChecks } from './file-checks.ts';

delete process.env.npm_command;

afterAll(runFileChecks);
