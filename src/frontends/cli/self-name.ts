/**
 * How the user started acx, for the commands acx prints back to them: `npx acx` when npm ran it
 * (`npx acx …` in a checkout or a project that depends on acx, where `acx` alone is not on PATH),
 * otherwise `acx` (an install on PATH, `npm link`). npm marks what it runs with npm_command.
 */
export function selfName(env: NodeJS.ProcessEnv = process.env): string {
  return env.npm_command === 'exec' || env.npm_command === 'run-script' ? 'npx acx' : 'acx';
}
