import type { ToolContentPart, ToolContext } from '../../core/tool.ts';
import type { GeneratedMedia } from '../../model/media.ts';
import type { PolicyTool } from '../policy.ts';
import type { GuardedDirectory } from '../sandbox/protected.ts';
import { WorkspaceRoots } from '../sandbox/roots.ts';
import { EXTENSION_OF, freshMediaPath, type SharedFiles, writeNewWorkspaceFile } from './media-files.ts';

/**
 * What the generating media tools share: where they work, how a result lands in the workspace,
 * and what the model reads back. A generation spends money and cannot be undone, so every one is
 * an `unsafe` effect: after a crash the engine never runs it again and tells the model the
 * outcome is unknown. Each is opt-in (grant by name) and offered only on a provider that runs it.
 */
export interface MediaToolOptions {
  workspace: string;
  additionalRoots?: readonly string[];
  now?: () => Date;
  /** The folders acx loads code and configuration from: no result is saved in them. */
  guarded?: readonly GuardedDirectory[];
  /** On a platform: its shared files, so a source may be an asset uuid as well as a workspace path. */
  shared?: SharedFiles | undefined;
}

/** The largest image a generated result is shown inline (larger ones are only saved). */
const MAX_INLINE_IMAGE_BYTES = 5 * 1024 * 1024;

export function mediaRoots(options: MediaToolOptions): WorkspaceRoots {
  return new WorkspaceRoots({
    primary: options.workspace,
    ...(options.additionalRoots ? { additional: options.additionalRoots } : {}),
    ...(options.guarded ? { guarded: options.guarded } : {}),
  });
}

/** The declarations every generating tool carries. */
export const GENERATION: Pick<PolicyTool, 'capabilityScopes' | 'kind' | 'effect' | 'optIn'> = {
  capabilityScopes: ['net.fetch', 'fs.write'],
  kind: 'fetch',
  effect: 'unsafe',
  optIn: true,
};

export const pathField = 'Where to save it in the workspace (a new file; its extension follows the format). Default: a fresh name under media/.';

/** The path a result is saved under: the model's (its extension made to match the bytes) or a fresh one. */
export function targetPath(requested: string | undefined, kind: string, mediaType: string, now: Date): string {
  if (requested === undefined || requested.trim() === '') return freshMediaPath(kind, mediaType, now);
  const extension = EXTENSION_OF[mediaType];
  if (!extension) return requested;
  const dot = requested.lastIndexOf('.');
  const slash = Math.max(requested.lastIndexOf('/'), requested.lastIndexOf('\\'));
  const stem = dot > slash + 1 ? requested.slice(0, dot) : requested;
  const current = dot > slash + 1 ? requested.slice(dot + 1).toLowerCase() : '';
  return current === extension || (extension === 'jpg' && current === 'jpeg') ? requested : `${stem}.${extension}`;
}

/**
 * Saves a generated file and says what happened: the path, size, type, what the provider said
 * it used, and (for an image that is not too large) the image itself, for the vision gate.
 */
export function saveGenerated(
  roots: WorkspaceRoots,
  generated: GeneratedMedia,
  request: { path?: string | undefined; kind: string; label: string; now: Date },
  context: Pick<ToolContext, 'onFileChange'>,
): { content: ToolContentPart[] } {
  const saved = writeNewWorkspaceFile(roots, targetPath(request.path, request.kind, generated.mediaType, request.now), generated.data, context.onFileChange);
  const lines = [`${request.label}: saved ${saved} (${generated.mediaType}, ${generated.data.length} bytes).`];
  if (generated.revisedPrompt) lines.push(`The provider revised the prompt to: ${JSON.stringify(generated.revisedPrompt)}`);
  if (generated.costUsd !== undefined) lines.push(`The provider charged $${generated.costUsd}.`);
  const parts: ToolContentPart[] = [{ type: 'text', text: lines.join('\n') }];
  if (generated.mediaType.startsWith('image/') && generated.data.length <= MAX_INLINE_IMAGE_BYTES) {
    parts.push({ type: 'image', data: Buffer.from(generated.data).toString('base64'), mediaType: generated.mediaType });
  }
  return { content: parts };
}
