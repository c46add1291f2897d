import type { Command } from 'commander';
import { CliExit } from '../output.ts';
import { jsonOption } from '../common-options.ts';

export function register(program: Command): void {
  program
    .command('spec')
    .description('validate a cartridge against the acx.package-spec/1 profile, or check an agent directory before building; both also say whether a default acx host can satisfy the harness requirements')
    .argument('<target>', '.acx file or agent directory')
    .addOption(jsonOption())
    .action(async (target: string, opts: { json?: boolean }) => {
      // The host check negotiates (ajv, the tool modules): loaded only for this command.
      const { checkSpecOnDefaultHost } = await import('../../../app/default-host.ts');
      const r = checkSpecOnDefaultHost(target);
      if (opts.json) process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
      else {
        const lines = [`${r.kind}: ${r.target}`];
        for (const a of r.artifacts) lines.push(`  ${a.required ? '*' : ' '} ${a.role.padEnd(16)} ${a.schema.padEnd(28)} ${a.kind}${a.count !== undefined ? ` (${a.count})` : ''}`);
        lines.push(`validation: ${r.ok ? 'clean' : 'issues'}`);
        for (const i of r.issues) lines.push(`  - ${i}`);
        process.stdout.write(`${lines.join('\n')}\n`);
      }
      if (!r.ok) throw new CliExit('failed', '');
    });
}
