import fs from 'node:fs';
import { basename } from 'node:path';
import { z } from 'zod';
import { Workspace } from '../sandbox/workspace.ts';
import type { PolicyTool } from '../policy.ts';

/**
 * `code_attach`: feeds a workspace file into the provider's code sandbox (OpenAI's code
 * interpreter), so the next code run can read it. The file is uploaded through the provider's
 * files API and joins the container of every later code run of this agent. The path comes from
 * the model, so it is confined to the workspace like fs_read's. Part of the `code_execution`
 * grant; OpenAI only (xAI's code execution takes no input files).
 */
export interface CodeAttachOptions {
  workspace: string;
  /** Uploads the bytes and makes the file part of the code sandbox; returns the provider's file id. */
  attach(file: { data: Uint8Array; filename: string }, signal: AbortSignal): Promise<string>;
  /** Largest file accepted (default 50 MiB). */
  maxBytes?: number;
}

const inputSchema = z.object({
  path: z.string().max(4096).describe('A file in the workspace, relative to its root, e.g. "data/sales.csv".'),
});

export function createCodeAttachTool(options: CodeAttachOptions): PolicyTool {
  const workspace = new Workspace(options.workspace);
  const maxBytes = options.maxBytes ?? 50 * 1024 * 1024;
  return {
    name: 'code_attach',
    description:
      'Make a workspace file available to your code execution sandbox: after this, code you run can open it by its file name in the working directory. ' +
      'Files your code writes come back into the workspace by themselves.',
    inputSchema,
    capabilityScopes: ['fs.read', 'x-code-execution'],
    kind: 'read',
    // Uploading twice leaves two copies of the same bytes: harmless for the sandbox.
    effect: 'idempotent',
    optIn: true,
    grant: 'code_execution',
    async execute(input, context) {
      const file = workspace.openRead(input.path);
      let data: Buffer;
      try {
        if (file.stat.size > maxBytes) throw new Error(`${file.relative} is ${file.stat.size} bytes; the limit for code_attach is ${maxBytes}.`);
        data = fs.readFileSync(file.fd);
      } finally {
        fs.closeSync(file.fd);
      }
      const fileId = await options.attach({ data, filename: basename(file.relative) }, context.abortSignal);
      return `Attached ${file.relative} (${data.length} bytes) as ${basename(file.relative)}; the next code run can read it (file id ${fileId}).`;
    },
  } satisfies PolicyTool & { execute(input: z.infer<typeof inputSchema>, context: Parameters<NonNullable<PolicyTool['execute']>>[1]): Promise<string> };
}
