// A store URL as logs, errors and resolved-config show it: the password never, whatever the URL's shape.
import { describe, expect, it } from 'vitest';
import { redactUrl, storeKindOf } from '../../src/store/store-url.ts';

describe('redactUrl', () => {
  it.each([
    ['postgres://acx:pw-1@db.internal:5432/acx?sslmode=require', 'postgres://acx:***@db.internal:5432/acx?sslmode=require'],
    ['postgres://acx:pw-1@/acx?host=/run/postgresql', 'postgres://acx:***@/acx?host=/run/postgresql'],
    ['postgresql://acx@/acx?host=/run/postgresql', 'postgresql://acx@/acx?host=/run/postgresql'],
    ['postgres://db.internal/acx?user=acx&password=pw-1', 'postgres://db.internal/acx?user=acx&password=***'],
    ['postgres://acx:pw-1@/acx?host=/tmp&password=pw-1', 'postgres://acx:***@/acx?host=/tmp&password=***'],
    ['postgres://acx:p@w-1@/acx', '(an unparsable URL)'],
  ])('%s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
    expect(redactUrl(url)).not.toContain('pw-1');
  });

  it('a store that is not a postgres:// URL is refused without showing its password', () => {
    expect(() => storeKindOf('mysql://acx:pw-1@db/acx')).toThrow(/The store "mysql:\/\/acx:\*\*\*@db\/acx" is not a postgres:\/\/ URL/);
  });
});
