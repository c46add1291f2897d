import { AcxError } from '../core/errors.ts';

/**
 * The files OpenAI's code interpreter reads and writes. Files go in through the AI SDK's files
 * API (`uploadFile` on the provider's `files()`); what a run wrote is listed and read from its
 * container, which the AI SDK has no API for, so those two GETs are made here on the same base
 * URL and key as the model calls.
 */
export interface ContainerFile {
  id: string;
  /** The file's path in the container, e.g. /mnt/data/chart.png. */
  path: string;
  /** `assistant` for a file the code wrote, `user` for one attached to the run. */
  source: string;
  bytes: number | undefined;
}

export interface OpenAICodeFiles {
  upload(file: { data: Uint8Array; filename: string }, signal?: AbortSignal): Promise<string>;
  list(containerId: string, signal?: AbortSignal): Promise<ContainerFile[]>;
  download(containerId: string, fileId: string, signal?: AbortSignal): Promise<Uint8Array>;
}

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export async function openaiCodeFiles(settings: { apiKey: string | undefined; baseURL: string | undefined }): Promise<OpenAICodeFiles> {
  const { createOpenAI } = await import('@ai-sdk/openai');
  const baseURL = (settings.baseURL ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const provider = createOpenAI({ ...(settings.apiKey ? { apiKey: settings.apiKey } : {}), baseURL });
  const get = async (path: string, signal: AbortSignal | undefined): Promise<Response> => {
    const response = await fetch(`${baseURL}${path}`, {
      headers: settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {},
      ...(signal ? { signal } : {}),
    });
    if (!response.ok) {
      const body = await response.text().catch(() => '');
      throw new AcxError(response.status === 404 ? 'provider-not-found' : 'provider-rejected', `OpenAI answered ${response.status} for GET ${path}: ${body.slice(0, 300)}`, {
        hint: 'The container of a code run expires after a while of inactivity; its files can only be fetched while it lives.',
      });
    }
    return response;
  };
  return {
    async upload(file, signal) {
      const { uploadFile } = await import('./ai-calls.ts');
      const result = await uploadFile({ api: provider.files(), data: file.data, filename: file.filename, ...(signal ? { abortSignal: signal } : {}) });
      const id = (result.providerReference as Record<string, string>).openai;
      if (!id) throw new AcxError('provider-malformed', 'OpenAI accepted the upload but named no file id.');
      return id;
    },
    async list(containerId, signal) {
      const body = (await (await get(`/containers/${encodeURIComponent(containerId)}/files`, signal)).json()) as { data?: unknown[] };
      return (body.data ?? []).flatMap((entry) => {
        const file = entry as { id?: unknown; path?: unknown; source?: unknown; bytes?: unknown };
        if (typeof file.id !== 'string' || typeof file.path !== 'string') return [];
        return [{ id: file.id, path: file.path, source: typeof file.source === 'string' ? file.source : 'assistant', bytes: typeof file.bytes === 'number' ? file.bytes : undefined }];
      });
    },
    async download(containerId, fileId, signal) {
      const response = await get(`/containers/${encodeURIComponent(containerId)}/files/${encodeURIComponent(fileId)}/content`, signal);
      return new Uint8Array(await response.arrayBuffer());
    },
  };
}
