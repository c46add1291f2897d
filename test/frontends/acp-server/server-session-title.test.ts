// A session's title from its first prompt (no model call): one line, cut at a word boundary.
import { expect, it } from 'vitest';
import { titleFromPrompt } from '../../../src/frontends/acp-server/session-title.ts';

it('keeps a short prompt as it is, on one line', () => {
  expect(titleFromPrompt([{ type: 'text', text: '  Fix the\nlogin   bug ' }])).toBe('Fix the login bug');
});

it('cuts a long prompt at a word boundary with an ellipsis, without trailing punctuation', () => {
  const title = titleFromPrompt([{ type: 'text', text: 'Summarize the incident report, list every action item, and draft the follow-up email to the team' }]);
  expect(title).toBe('Summarize the incident report, list every action item, and…');
  expect(title!.length).toBeLessThanOrEqual(60);
});

it('names a linked resource, and gives no title for a prompt without words', () => {
  expect(titleFromPrompt([{ type: 'text', text: 'Review' }, { type: 'resource_link', name: 'auth.ts', uri: 'file:///p/auth.ts' }])).toBe('Review auth.ts');
  expect(titleFromPrompt([{ type: 'image', data: 'AAAA', mimeType: 'image/png' }])).toBeUndefined();
});
