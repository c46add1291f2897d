import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expiresSoon, joinScopes, StoredOAuthProvider } from '../../src/mcp/oauth/provider.ts';
import { McpCredentialStore } from '../../src/mcp/oauth/store.ts';
import { silentLogger } from '../../src/util/logger.ts';

const key = { name: 'notes', url: 'https://notes.example/mcp' };
const store = () => McpCredentialStore.inConfigHome(fs.mkdtempSync(path.join(os.tmpdir(), 'acx-oauth-provider-')));
const tokens = (access: string) => ({ access_token: access, token_type: 'bearer', refresh_token: `r-${access}`, expires_in: 3600, expires_at: Date.now() + 3_600_000 });

describe('the stored OAuth client', () => {
  it('refreshes within a minute of expiry, or within half the lifetime of a short-lived token', () => {
    const at = 1_000_000;
    expect(expiresSoon({ access_token: 'a', token_type: 'bearer', expires_in: 3600, expires_at: at + 3_600_000 }, at)).toBe(false);
    expect(expiresSoon({ access_token: 'a', token_type: 'bearer', expires_in: 3600, expires_at: at + 3_600_000 }, at + 3_540_000)).toBe(true);
    expect(expiresSoon({ access_token: 'a', token_type: 'bearer', expires_in: 4, expires_at: at + 4_000 }, at + 1_999)).toBe(false);
    expect(expiresSoon({ access_token: 'a', token_type: 'bearer', expires_in: 4, expires_at: at + 4_000 }, at + 2_000)).toBe(true);
    // No stated lifetime: nothing to refresh ahead of (a 401 still refreshes).
    expect(expiresSoon({ access_token: 'a', token_type: 'bearer' }, at)).toBe(false);
  });

  it("a refused token is forgotten, unless another process stored newer ones since (refresh tokens rotate: only one wins)", async () => {
    const credentials = store();
    credentials.update(key, () => ({ tokens: tokens('first') }));
    const provider = new StoredOAuthProvider({ key, store: credentials, logger: silentLogger });
    expect((await provider.tokens())?.access_token).toBe('first');
    // Meanwhile a worker refreshed: the store holds its newer tokens.
    credentials.update(key, (current) => ({ ...current, tokens: tokens('second') }));
    provider.invalidateCredentials('tokens');
    expect(credentials.read(key).tokens?.access_token).toBe('second');
    // The tokens it read are the ones refused: they go.
    expect((await provider.tokens())?.access_token).toBe('second');
    provider.invalidateCredentials('tokens');
    expect(credentials.read(key).tokens).toBeUndefined();
  });

  it('what is stored for one URL is never handed to another', async () => {
    const credentials = store();
    credentials.update(key, () => ({ tokens: tokens('for-notes') }));
    const moved = new StoredOAuthProvider({ key: { ...key, url: 'https://elsewhere.example/mcp' }, store: credentials, logger: silentLogger });
    expect(await moved.tokens()).toBeUndefined();
    expect(moved.hasTokens()).toBe(false);
  });

  it('joins scopes once each, in first-seen order', () => {
    expect(joinScopes('a b', 'b c', '', ' d ')).toBe('a b c d');
  });
});
