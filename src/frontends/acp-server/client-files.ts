import * as acp from '@agentclientprotocol/sdk';
import type { FileContents } from '../../tools/builtin/fs.ts';
import { AcxError } from '../../core/errors.ts';
import { clientReason } from './client-errors.ts';

/**
 * The editor's buffers as the file tools' contents, for what the client advertised in
 * `initialize` (`fs.readTextFile`, `fs.writeTextFile`): reads see unsaved changes, writes land
 * in the editor. The tools confine every path before the client is asked about it.
 */
export function clientFileContents(
  client: acp.AgentContext,
  sessionId: string,
  capabilities: acp.FileSystemCapabilities | null | undefined,
): FileContents | undefined {
  const read = capabilities?.readTextFile === true;
  const write = capabilities?.writeTextFile === true;
  if (!read && !write) return undefined;
  const failed = (what: string, path: string, error: unknown) =>
    new AcxError('client-file', `The editor could not ${what} ${path}: ${clientReason(error)}`, {
      hint: 'Check that the file can be opened in the editor, or try again.',
    });
  return {
    ...(read
      ? {
          async read(path: string, signal: AbortSignal) {
            try {
              const response = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path }, { cancellationSignal: signal, stopWaitingOnCancel: true });
              return response.content;
            } catch (error) {
              throw failed('read', path, error);
            }
          },
        }
      : {}),
    ...(write
      ? {
          async write(path: string, content: string, signal: AbortSignal) {
            try {
              await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path, content }, { cancellationSignal: signal, stopWaitingOnCancel: true });
            } catch (error) {
              throw failed('write', path, error);
            }
          },
        }
      : {}),
  };
}
