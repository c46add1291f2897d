import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { tool } from '../../src/tools/tool.ts';

/**
 * An unsafe tool that asks for approval under every mode but allow-all, and leaves a line (this
 * process's pid and the service) in `marker` when it runs: evidence of which process ran it.
 */
export function deployTool(marker: string) {
  return tool({
    name: 'deploy',
    description: 'Deploy a service',
    inputSchema: z.object({ service: z.string() }),
    capabilityScopes: [],
    kind: 'execute',
    effect: 'unsafe',
    execute: ({ service }) => {
      appendFileSync(marker, `${process.pid} ${service}\n`);
      return `deployed ${service}`;
    },
  });
}
