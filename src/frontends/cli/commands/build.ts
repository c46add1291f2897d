import type { Command } from 'commander';
import { buildCartridge } from '../../../cartridge/build.ts';
import { ScrubBlockedError } from '../../../cartridge/scrub-gate.ts';
import { CliExit } from '../output.ts';
import { cartridgeOutOption, forceOption, jsonOption, publisherOption } from '../common-options.ts';

export function register(program: Command): void {
  program
    .command('build')
    .description('pack an agent directory into a signed .acx cartridge')
    .argument('<dir>', 'agent directory (agent.json layout, or a reference agent-package)')
    .addOption(cartridgeOutOption())
    .option('--key <file>', 'Ed25519 private key PEM (env ACX_SIGNING_KEY)', process.env.ACX_SIGNING_KEY)
    .addOption(publisherOption())
    .option('--zlib', 'deflate files (stock sqlar; the reference CLI cannot read these rows)')
    .addOption(forceOption())
    .addOption(jsonOption())
    .action(async (dir: string, opts: { out: string; key?: string; publisher?: string; zlib?: boolean; force?: boolean; json?: boolean }) => {
      if (!opts.key) throw new CliExit('usage', 'acx build: --key <file> is required (create one with `acx keygen`)');
      try {
        const r = buildCartridge({ dir, out: opts.out, key: opts.key, ...(opts.publisher ? { publisher: opts.publisher } : {}), overwrite: opts.force ?? false, compression: opts.zlib ? 'zlib' : 'none' });
        // A manifest the directory brings may ask for more than a default host has: say so now.
        // (A generated one is built from the agent's own built-ins and always fits.)
        const host = r.harnessRequirements === 'directory' ? await defaultHostCheck(r.out) : { issues: [], notes: [] };
        if (opts.json) process.stdout.write(`${JSON.stringify({ ...r, defaultHost: host }, null, 2)}\n`);
        else {
          process.stdout.write(`wrote:     ${r.out}\ncartridge: ${r.cartridgeId}\nrom hash:  ${r.manifestHash}\nkeyid:     ${r.keyid}\nobjects:   ${r.objectCount} (${r.fileCount} files, ${r.memoryCount} memory records)\n`);
          for (const s of [...r.skipped, ...host.issues, ...host.notes]) process.stdout.write(`note:      ${s}\n`);
        }
      } catch (error) {
        // Under --json the error itself is printed: one JSON object, with the findings as details.
        if (ScrubBlockedError.isInstance(error) && !opts.json) {
          const lines = error.findings.map((f) => `  ${f.file} @ byte ${f.byteOffset}: ${f.ruleId}`).join('\n');
          throw new CliExit('scrub-blocked', `acx build: scrub gate blocked the build (nothing was written):\n${lines}\n  → ${error.hint ?? ''}`);
        }
        throw error;
      }
    });
}

async function defaultHostCheck(cartridge: string): Promise<{ issues: string[]; notes: string[] }> {
  const { cartridgeSubject, defaultHostProblems } = await import('../../../app/default-host.ts');
  const subject = cartridgeSubject(cartridge);
  return subject ? defaultHostProblems(subject) : { issues: [], notes: [] };
}
