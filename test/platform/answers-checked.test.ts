// The spec check sits on the test platform itself, not on one client: an answer to a request the
// test's own helper never made (a plain fetch here, acx's client or a wake elsewhere) is held to
// openapi.yaml all the same, and an error from a route the spec does not describe must still be
// a problem document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_MISSING } from '../support/openapi.ts';
import { reached, startTestPlatform, type TestPlatform, violations } from '../support/platform.ts';

describe.skipIf(OPENAPI_MISSING)('every answer of a test platform is checked as it leaves', () => {
  let p: TestPlatform;
  beforeAll(async () => {
    p = await startTestPlatform();
  });
  afterAll(() => p?.close());

  it('an answer to a plain fetch is recorded and validated', async () => {
    const nova = p.user('nova', 'ai');
    const answer = await fetch(`${p.url}/users/dashboard`, { headers: { authorization: `Bearer ${nova.token}` } });
    expect(answer.status).toBe(200);
    await answer.text();
    expect(reached.has('GET /users/dashboard 200')).toBe(true);
    const refused = await fetch(`${p.url}/users/password`, { method: 'PATCH', body: '{}' });
    expect(refused.status).toBe(401);
    await refused.text();
    expect(violations).toEqual([]);
  });
});
