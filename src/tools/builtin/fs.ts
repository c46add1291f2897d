import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { GuardedDirectory } from '../sandbox/protected.ts';
import { WorkspaceRoots } from '../sandbox/roots.ts';
import { type OpenedFile, replaceContent, type Workspace, WorkspacePathError, type WorkspaceHooks } from '../sandbox/workspace.ts';
import type { Tool } from '../tool.ts';

/**
 * File tools confined to the workspace: `fs_read`, `fs_list` (read-only) and `fs_write`
 * (idempotent: writing the same content twice leaves the same file). Paths come from the model
 * and are walked by Workspace (relative, or absolute inside a root; no `..`, no escaping symlinks
 * or hard links, nothing created outside even while the workspace is being changed underneath).
 */
export interface FsToolsOptions {
  workspace: string;
  /** Further roots (an editor's additional directories), reached by absolute paths. */
  additionalRoots?: readonly string[];
  /** Bytes returned by one fs_read call (default 256 KiB); larger files are read in pages. */
  maxReadBytes?: number;
  /** Largest content fs_write accepts (default 10 MiB). */
  maxWriteBytes?: number;
  /** Entries shown by one fs_list call (default 1000). */
  maxListEntries?: number;
  /** Test seam to stage a swap in the middle of a path walk; see WorkspaceHooks. */
  hooks?: WorkspaceHooks;
  /** Where file contents are read and written once a path is confined; default the disk. */
  contents?: FileContents;
  /** The folders acx loads code and configuration from: fs_write refuses every path in them. */
  guarded?: readonly GuardedDirectory[];
}

/**
 * An editor that holds the files open (ACP's fs/read_text_file and fs/write_text_file): reads
 * see its unsaved buffers, writes land in them. Paths are confined here first, exactly as for
 * the disk; the editor is given the absolute path (as the roots were given, not resolved).
 */
export interface FileContents {
  read?(absolutePath: string, signal: AbortSignal): Promise<string>;
  write?(absolutePath: string, content: string, signal: AbortSignal): Promise<void>;
}

const DEFAULT_MAX_READ_BYTES = 256 * 1024;

const pathField = z
  .string()
  .max(4096)
  .describe('A path relative to the workspace root, e.g. "src/index.ts" (or an absolute path inside a workspace root).');

export const fsReadInputSchema = z.object({
  path: pathField,
  offset: z.number().int().min(0).optional().describe('Byte offset to start reading at (for large files).'),
});
export const fsListInputSchema = z.object({
  path: pathField.optional().describe('A directory relative to the workspace root; defaults to the root.'),
});
export const fsWriteInputSchema = z.object({
  path: pathField,
  content: z.string().describe('The complete new content of the file (UTF-8).'),
});

export function createFsTools(options: FsToolsOptions): [Tool, Tool, Tool] {
  const roots = new WorkspaceRoots({
    primary: options.workspace,
    ...(options.additionalRoots ? { additional: options.additionalRoots } : {}),
    ...(options.hooks ? { hooks: options.hooks } : {}),
    ...(options.guarded ? { guarded: options.guarded } : {}),
  });
  return [createFsRead(roots, options), createFsList(roots, options), createFsWrite(roots, options)];
}

/** How a file is named back to the model: relative in the primary root, absolute in another. */
function shown(roots: WorkspaceRoots, workspace: Workspace, file: OpenedFile): string {
  return workspace === roots.primary ? file.relative : file.realPath;
}

function createFsRead(roots: WorkspaceRoots, options: FsToolsOptions): Tool<z.infer<typeof fsReadInputSchema>> {
  const maxBytes = options.maxReadBytes ?? DEFAULT_MAX_READ_BYTES;
  return {
    name: 'fs_read',
    description: `Read a text file in the workspace (up to ${maxBytes} bytes per call; use offset for the rest).`,
    inputSchema: fsReadInputSchema,
    capabilityScopes: ['fs.read'],
    kind: 'read',
    effect: 'read-only',
    execute(input, context) {
      const { workspace, relative } = roots.locate(input.path);
      const file = workspace.openRead(relative);
      const name = shown(roots, workspace, file);
      const read = options.contents?.read;
      if (read) {
        fs.closeSync(file.fd);
        return read(roots.absolute(input.path), context.abortSignal).then((text) => {
          const all = Buffer.from(text, 'utf8');
          const offset = Math.min(input.offset ?? 0, all.length);
          return page(name, all.subarray(offset, offset + maxBytes), offset, all.length);
        });
      }
      try {
        const size = file.stat.size;
        const offset = Math.min(input.offset ?? 0, size);
        const buffer = Buffer.alloc(Math.min(maxBytes, size - offset));
        let done = 0;
        while (done < buffer.length) {
          const n = fs.readSync(file.fd, buffer, done, buffer.length - done, offset + done);
          if (n === 0) break;
          done += n;
        }
        return page(name, buffer.subarray(0, done), offset, size);
      } finally {
        fs.closeSync(file.fd);
      }
    },
  };
}

/** One page of a file for the model: its text and, when there is more, where the rest starts. */
function page(name: string, bytes: Buffer, offset: number, size: number): string {
  if (looksBinary(bytes)) return `${name} is a binary file (${size} bytes); its content is not shown.`;
  let text = bytes.toString('utf8');
  const end = offset + bytes.length;
  if (offset > 0 || end < size) {
    text += `\n[showing bytes ${offset}-${end} of ${size}${end < size ? `; call fs_read again with offset=${end} for more` : ''}]`;
  }
  return text;
}

function createFsList(roots: WorkspaceRoots, options: FsToolsOptions): Tool<z.infer<typeof fsListInputSchema>> {
  const maxEntries = options.maxListEntries ?? 1000;
  return {
    name: 'fs_list',
    description: 'List a directory in the workspace: one entry per line, directories end with "/", files show their size.',
    inputSchema: fsListInputSchema,
    capabilityScopes: ['fs.read'],
    kind: 'read',
    effect: 'read-only',
    execute(input) {
      const { workspace, relative } = roots.locate(input.path ?? '.');
      const dir = workspace.openDirectory(relative);
      try {
        const base = workspace.descriptorPath(dir);
        const entries = fs.readdirSync(base, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name));
        const lines = entries.slice(0, maxEntries).map((entry) => {
          if (entry.isDirectory()) return `${entry.name}/`;
          if (entry.isSymbolicLink()) return `${entry.name} -> (symlink)`;
          if (!entry.isFile()) return `${entry.name} (special file)`;
          let size = '';
          try {
            size = ` (${fs.lstatSync(path.join(base, entry.name)).size} bytes)`;
          } catch {
            // vanished meanwhile
          }
          return `${entry.name}${size}`;
        });
        if (entries.length > maxEntries) lines.push(`[${entries.length - maxEntries} more entries not shown]`);
        const name = shown(roots, workspace, dir);
        const header = `${name === '.' ? 'Workspace root' : name + '/'}: ${entries.length} entries`;
        return [header, ...lines].join('\n');
      } finally {
        fs.closeSync(dir.fd);
      }
    },
  };
}

function createFsWrite(roots: WorkspaceRoots, options: FsToolsOptions): Tool<z.infer<typeof fsWriteInputSchema>> {
  const maxBytes = options.maxWriteBytes ?? 10 * 1024 * 1024;
  return {
    name: 'fs_write',
    description: 'Write a text file in the workspace, replacing its content (parent directories are created).',
    inputSchema: fsWriteInputSchema,
    capabilityScopes: ['fs.write'],
    kind: 'edit',
    effect: 'idempotent',
    execute(input, context) {
      const data = Buffer.from(input.content, 'utf8');
      if (data.length > maxBytes) {
        throw new WorkspacePathError(`The content is ${data.length} bytes; the limit is ${maxBytes}.`, 'Write a smaller file.');
      }
      const { workspace, relative } = roots.locate(input.path);
      const existed = fs.existsSync(roots.absolute(input.path));
      const wrote = (path: string) => {
        context.onFileChange?.({ path, kind: existed ? 'modified' : 'created' });
        return `Wrote ${data.length} bytes to ${path}.`;
      };
      const write = options.contents?.write;
      if (write) {
        // The confined open creates a new file (and its directories) for the editor to fill; when
        // the editor refuses, they are removed again.
        return workspace.openWriteThen(relative, async (file) => {
          const path = shown(roots, workspace, file);
          await write(roots.absolute(input.path), input.content, context.abortSignal);
          return wrote(path);
        });
      }
      const file = workspace.openWrite(relative);
      const path = shown(roots, workspace, file);
      replaceContent(file, data);
      return wrote(path);
    },
  };
}

function looksBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, 8192).includes(0);
}
