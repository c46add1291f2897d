import fs from 'node:fs';
import { basename } from 'node:path';
import { z } from 'zod';
import { Workspace } from '../sandbox/workspace.ts';
import type { PolicyTool } from '../policy.ts';
import { isAssetUuid, MediaInputError, readSharedFile, type SharedFiles, SOURCE_HINT } from './media-files.ts';
import { lazySchema } from '../../core/lazy-schema.ts';

/**
 * `code_attach`: feeds a file (a workspace path, or an asset uuid on a platform) into the provider's code sandbox (OpenAI's code
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
  /** On a platform: its shared files, so the file may be an asset uuid as well as a workspace path. */
  shared?: SharedFiles | undefined;
}

const inputSchema = lazySchema(() => z.object({
  path: z.string().max(4096).describe(`The file: ${SOURCE_HINT} (a workspace path is relative to its root, e.g. "data/sales.csv").`),
}));

export function createCodeAttachTool(options: CodeAttachOptions): PolicyTool {
  const workspace = new Workspace(options.workspace);
  const maxBytes = options.maxBytes ?? 50 * 1024 * 1024;
  const readFromWorkspace = (path: string) => {
    const file = workspace.openRead(path);
    try {
      if (file.stat.size > maxBytes) throw new MediaInputError(`${file.relative} is ${file.stat.size} bytes; the limit for code_attach is ${maxBytes}.`);
      return { data: fs.readFileSync(file.fd), filename: basename(file.relative), shown: file.relative };
    } finally {
      fs.closeSync(file.fd);
    }
  };
  const readAsset = async (asset: string, signal: AbortSignal) => {
    const { data, filename } = await readSharedFile(options.shared, asset, { maxBytes, what: 'a file for code_attach', signal });
    return { data, filename: basename(filename) || 'file', shown: `asset ${asset} (${JSON.stringify(filename)})` };
  };
  return {
    name: 'code_attach',
    description:
      'Make a file (from your workspace, or an asset shared on the timeline) available to your code execution sandbox: after this, code you run can open it by its file name in the working directory. ' +
      'Files your code writes come back into the workspace by themselves.',
    inputSchema: inputSchema(),
    capabilityScopes: ['fs.read', 'x-code-execution'],
    kind: 'read',
    // Uploading twice leaves two copies of the same bytes: harmless for the sandbox.
    effect: 'idempotent',
    optIn: true,
    grant: 'code_execution',
    async execute(input, context) {
      const { data, filename, shown } = isAssetUuid(input.path) ? await readAsset(input.path, context.abortSignal) : readFromWorkspace(input.path);
      const fileId = await options.attach({ data, filename }, context.abortSignal);
      return `Attached ${shown} (${data.length} bytes) as ${filename}; the next code run can read it (file id ${fileId}).`;
    },
  } satisfies PolicyTool & { execute(input: z.infer<ReturnType<typeof inputSchema>>, context: Parameters<NonNullable<PolicyTool['execute']>>[1]): Promise<string> };
}
