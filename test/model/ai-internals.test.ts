// acx reuses the AI SDK's own internals for its model call, all through src/model/ai-internals.ts.
// An `ai` upgrade that drops or renames one must fail here, naming it, not somewhere deep in a turn.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as installed from 'ai/internal';
import { describe, expect, it } from 'vitest';
import { AI_INTERNALS_USED, missingAiInternals } from '../../src/model/ai-internals.ts';
import { SRC, sourceFiles } from '../architecture/imports.ts';

describe('the ai internals acx needs', () => {
  it('the installed ai provides every one', () => {
    expect(missingAiInternals(installed), 'exports acx needs that the installed "ai/internal" lacks').toEqual([]);
  });

  it('a missing one is named', () => {
    const { prepareTools: _dropped, ...withoutOne } = installed;
    expect(missingAiInternals(withoutOne)).toEqual(['prepareTools']);
    expect(missingAiInternals({ ...installed, parseToolCall: 'not a function' })).toEqual(['parseToolCall']);
  });

  it('only src/model/ai-internals.ts imports them', () => {
    const importers = sourceFiles().filter((file) => /from\s+['"]ai\/internal['"]|import\(\s*['"]ai\/internal['"]/.test(readFileSync(join(SRC, file), 'utf8')));
    expect(importers).toEqual(['model/ai-internals.ts']);
    expect(AI_INTERNALS_USED.length).toBeGreaterThan(0);
  });
});
