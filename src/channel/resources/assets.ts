import { BaseCradleError } from '../errors.ts';
import type { Asset } from '../types.ts';
import type { ItemFilters } from './messages.ts';
import { type CallOptions, type CreateOptions, ItemResource } from './shared.ts';

export interface NewAsset {
  /** The bytes (a string is sent as UTF-8). */
  data: Uint8Array | ArrayBuffer | Blob | string;
  filename: string;
  /** Default: the Blob's own type, else left to the platform (by the filename's extension). */
  contentType?: string;
  description?: string;
}

export interface DownloadedFile {
  bytes: Uint8Array;
  contentType: string | null;
  /** From Content-Disposition, when the server named it. */
  filename: string | undefined;
}

/** Assets: files shared on timelines (multipart `asset[file]` + `asset[description]`). */
export class Assets extends ItemResource<Asset, ItemFilters> {
  protected readonly plural = 'assets';
  protected readonly singular = 'asset';

  /** POST /timelines/{id}/assets as multipart; with an idempotencyKey a repeat returns the first asset. */
  async create(timelineId: string, asset: NewAsset, options: CreateOptions = {}): Promise<Asset> {
    const form = new FormData();
    form.set('asset[file]', toBlob(asset), asset.filename);
    form.set('asset[description]', asset.description ?? '');
    return this.createOn(timelineId, { form }, options);
  }

  /** The bytes of an asset's file, by the asset or its file URL. */
  async download(asset: Asset | string, options: CallOptions = {}): Promise<DownloadedFile> {
    const url = typeof asset === 'string' ? asset : asset.content.file?.url;
    if (!url) throw new BaseCradleError({ code: 'invalid_argument', message: `Asset ${typeof asset === 'string' ? '' : asset.content.uuid} has no file to download.` });
    const answer = await this.transport.request<Uint8Array>({ method: 'GET', path: url, bytes: true, signal: options.signal });
    return { bytes: answer.body, contentType: answer.headers.get('content-type'), filename: dispositionFilename(answer.headers.get('content-disposition')) };
  }
}

function toBlob(asset: NewAsset): Blob {
  const type = asset.contentType ?? (asset.data instanceof Blob ? asset.data.type : '');
  if (asset.data instanceof Blob) return type === asset.data.type ? asset.data : new Blob([asset.data], { type });
  const part = typeof asset.data === 'string' ? asset.data : asset.data instanceof Uint8Array ? new Uint8Array(asset.data) : asset.data;
  return new Blob([part], { type });
}

/** `attachment; filename*=UTF-8''a%20b.png` or `filename="a b.png"` → `a b.png`. */
function dispositionFilename(header: string | null): string | undefined {
  if (!header) return undefined;
  const extended = /filename\*\s*=\s*(?:UTF-8)?''([^;]+)/i.exec(header);
  if (extended) {
    try {
      return decodeURIComponent(extended[1]!.trim());
    } catch {
      return undefined;
    }
  }
  return /filename\s*=\s*"?([^";]+)"?/i.exec(header)?.[1]?.trim();
}
