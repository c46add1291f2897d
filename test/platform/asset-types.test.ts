// An asset's content type is read from its bytes, and only an allowlist of types is shown by the
// browser: a PNG uploaded as a generic `file` is image/png and served inline; a page claiming to
// be an image is not one; everything else is a download with nosniff.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedTimeline, startTestPlatform, type TestPlatform } from '../support/platform.ts';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const PDF = Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n', 'latin1');
const BINARY = Buffer.from([0x00, 0x01, 0x02, 0x03, 0xfe, 0xff, 0x00, 0x10]);

describe('asset content types', () => {
  let p: TestPlatform;
  let token: string;
  let timeline: string;
  beforeAll(async () => {
    p = await startTestPlatform();
    const ada = p.user('ada');
    const nova = p.user('nova', 'ai', { trust: ['ada'] });
    token = nova.token;
    timeline = await sharedTimeline(p, ada, nova);
  });
  afterAll(() => p?.close());

  /** Uploads bytes as the SDK's generic `file` would (or with the type given) and fetches the file back. */
  async function roundTrip(bytes: Buffer, name: string, declared = 'application/octet-stream') {
    const form = new FormData();
    form.append('asset[file]', new Blob([bytes], { type: declared }), name);
    const created = await p.api('POST', `/timelines/${timeline}/assets`, { token, form });
    expect(created.status).toBe(201);
    const file = created.body.asset.content.file as { content_type: string; url: string };
    const served = await fetch(file.url);
    return {
      type: file.content_type,
      servedType: served.headers.get('content-type'),
      disposition: served.headers.get('content-disposition')!.split(';')[0],
      nosniff: served.headers.get('x-content-type-options'),
      bytes: Buffer.from(await served.arrayBuffer()),
    };
  }

  it('a PNG sent as a generic `file` with no extension is image/png, served inline, byte for byte', async () => {
    const png = await roundTrip(PNG, 'file');
    expect(png).toMatchObject({ type: 'image/png', servedType: 'image/png', disposition: 'inline', nosniff: 'nosniff' });
    expect(png.bytes.equals(PNG)).toBe(true);
    // A PDF claimed to be a JPEG is a PDF.
    expect(await roundTrip(PDF, 'scan.jpg', 'image/jpeg')).toMatchObject({ type: 'application/pdf', disposition: 'inline' });
  });

  it('a page claiming to be an image is not one; text keeps a text type it claims, and only plain text is shown', async () => {
    expect(await roundTrip(Buffer.from('<html><script>alert(1)</script></html>'), 'cat.png', 'image/png')).toMatchObject({ type: 'text/plain', disposition: 'inline', nosniff: 'nosniff' });
    expect(await roundTrip(Buffer.from('<!doctype html><p>hi</p>'), 'page.html', 'text/html')).toMatchObject({ type: 'text/html', disposition: 'attachment', nosniff: 'nosniff' });
    expect(await roundTrip(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), 'logo.svg')).toMatchObject({ type: 'image/svg+xml', disposition: 'attachment' });
    expect(await roundTrip(Buffer.from('a,b\n1,2\n'), 'table.csv')).toMatchObject({ type: 'text/csv', disposition: 'attachment' });
    expect(await roundTrip(Buffer.from('just some notes, ünïcode too\n'), 'notes')).toMatchObject({ type: 'text/plain', disposition: 'inline' });
  });

  it('bytes nothing names are a download; a claim of an inline type does not make them one', async () => {
    expect(await roundTrip(BINARY, 'blob.bin')).toMatchObject({ type: 'application/octet-stream', disposition: 'attachment', nosniff: 'nosniff' });
    expect(await roundTrip(BINARY, 'fake.mp4', 'video/mp4')).toMatchObject({ type: 'application/octet-stream', disposition: 'attachment' });
    expect(await roundTrip(BINARY, 'thing.sqlite', 'application/vnd.sqlite3')).toMatchObject({ type: 'application/vnd.sqlite3', disposition: 'attachment' });
  });
});
