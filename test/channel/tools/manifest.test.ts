// The manifest a timeline agent's brief lists its active tools in: one line each, with the one
// thing easy to get wrong, for exactly the tools that are active; and the plain reasons a
// refusal reaches the model as.
import { describe, expect, it } from 'vitest';
import { APIConnectionError, BaseCradleClient, createPlatformTools, MissingCredentialsError, PLATFORM_TOOL_GOTCHAS, RateLimitedError, toolManifest, ValidationFailedError } from '../../../src/channel/index.ts';
import { plainReason } from '../../../src/channel/tools/kit.ts';
import { tool } from '../../../src/tools/tool.ts';

describe('the tool manifest', () => {
  const platform = createPlatformTools({ client: new BaseCradleClient({ env: {}, baseUrl: 'http://127.0.0.1:9', token: 'bc_uat_unused-00000000' }), recentToolImages: () => [] });

  it('every platform tool has a gotcha, and no gotcha names a tool that does not exist', () => {
    expect(Object.keys(PLATFORM_TOOL_GOTCHAS).sort()).toEqual(platform.map((t) => t.name).sort());
  });

  it('one line per active tool, its kind, whether it is safe to repeat, and its gotcha', () => {
    const lines = toolManifest(platform).split('\n');
    expect(lines).toHaveLength(platform.length);
    expect(lines).toContain('- lock (edit): irreversible: the timeline takes no new content ever; needs confirm=<its uuid>, and without it only previews');
    expect(lines).toContain('- timelines_create (edit, not safe to repeat): each call makes another room (not idempotent)');
    expect(lines[0]).toBe('- messages_list (read): one page at a time, newest page first; pass before= for older ones');
  });

  it('only the tools given: another tool gets the first sentence of its description', () => {
    const own = tool({ name: 'weather', description: 'Look up the weather. Uses a paid API.', inputSchema: { type: 'object' }, capabilityScopes: ['net.fetch'], kind: 'fetch', effect: 'read-only' });
    const chosen = platform.filter((t) => t.name === 'messages_create');
    expect(toolManifest([...chosen, own])).toBe('- messages_create (edit): the only way to be heard: your final answer text is not posted\n- weather (fetch): Look up the weather.');
  });
});

describe('plain reasons', () => {
  it('say what the platform refused and why, with field errors and when to retry; the client’s own refusals as they are', () => {
    const problem = (code: string, detail: string, more: object = {}) => ({ type: 'x', title: 'T', status: 422, code, detail, instance: 'i', ...more });
    expect(plainReason(new ValidationFailedError({ message: 'm', status: 422, code: 'validation_failed', detail: 'Body is blank.', problem: problem('validation_failed', 'Body is blank.', { errors: { body: ["can't be blank"] } }) }))).toBe(
      "The platform refused (validation_failed): Body is blank. (body can't be blank)",
    );
    expect(plainReason(new RateLimitedError({ message: 'm', status: 429, code: 'rate_limited', detail: 'Too many.', retryAfter: 12 }))).toBe('The platform refused (rate_limited): Too many. Try again in 12 s.');
    expect(plainReason(new APIConnectionError({ message: 'No answer from BaseCradle for GET /users after 3 attempts: ECONNREFUSED.', code: 'connection_error' }))).toBe(
      'The platform could not be reached (GET /users after 3 attempts: ECONNREFUSED.).',
    );
    expect(plainReason(new MissingCredentialsError({ message: 'No BaseCradle credentials.', code: 'missing_credentials', hint: 'Set BASECRADLE_TOKEN.' }))).toBe('No BaseCradle credentials.\n  → Set BASECRADLE_TOKEN.');
  });
});
