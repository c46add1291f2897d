// A prompt's text with its arguments filled in: each {{name}} gets its value, and a value the
// text has no place for is listed after it rather than dropped.
import { describe, expect, it } from 'vitest';
import { completeFrom, fillPrompt } from '../../src/mcp/prompts.ts';

const prompt = {
  text: 'Notes for {{ version }}{{audience}}. Keep {{other}} as written.',
  arguments: [
    { name: 'version', required: true },
    { name: 'audience', required: false },
    { name: 'tone', required: false },
  ],
};

describe('fillPrompt', () => {
  it('puts each value where the text names it; an optional one not given leaves nothing; an undeclared placeholder stays', () => {
    expect(fillPrompt(prompt, { version: '1.4.0' })).toBe('Notes for 1.4.0. Keep {{other}} as written.');
  });

  it('lists the values the text has no place for after it', () => {
    expect(fillPrompt(prompt, { version: '1.4.0', audience: ' (customers)', tone: 'dry' })).toBe('Notes for 1.4.0 (customers). Keep {{other}} as written.\n\nArguments:\n- tone: dry');
  });
});

describe('completeFrom', () => {
  it('offers the known values that start with what was typed, ignoring case', () => {
    expect(completeFrom(['team', 'customers', 'Contributors'], 'C')).toEqual(['customers', 'Contributors']);
    expect(completeFrom(['team'], '')).toEqual(['team']);
  });
});
