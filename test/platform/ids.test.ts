// The platform's identifiers: UUIDv7 whose order is creation order (what makes a newest-uuid
// high-water mark safe), and tokens of the platform's shape.
import { describe, expect, it } from 'vitest';
import { isUuid, newApiToken, newUuid, tokenHash } from '../../src/platform/ids.ts';
import { importsOutside } from '../support/imports.ts';

describe('platform ids', () => {
  it('uuids are version 7 and strictly increasing, even many within one millisecond', () => {
    const ids = Array.from({ length: 20_000 }, () => newUuid());
    for (const id of ids.slice(0, 50)) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const sorted = [...ids].sort();
    expect(sorted).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every(isUuid)).toBe(true);
  });

  it('tokens are bc_uat_ and 32 alphanumerics, and only their SHA-256 is kept', () => {
    const token = newApiToken();
    expect(token).toMatch(/^bc_uat_[A-Za-z0-9]{32}$/);
    expect(newApiToken()).not.toBe(token);
    expect(tokenHash(token)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('the platform is a separate application', () => {
  it('src/platform imports only from src/core (the shared vocabulary), src/util, src/store, itself and npm packages', () => {
    expect(importsOutside('platform', ['core', 'util', 'store'])).toEqual([]);
  });
});
