// tool() infers execute's input from the schema: zod 4, zod 3 (zod/v3), any Standard Schema, an
// AI SDK jsonSchema<T>(). `npx tsc --noEmit -p .` checks this file: each @ts-expect-error marks a
// misspelled field that must NOT compile (tsc fails on an unused @ts-expect-error). The run-time
// half checks that the same schemas describe and validate input, and that a zod 3 tool runs.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonSchema } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod/v3';
import { createEngineHarness } from '../../src/harness/engine-harness.ts';
import { HarnessAgent } from '../../src/harness/harness-agent.ts';
import { fromLanguageModel } from '../../src/model/providers.ts';
import { normalizeSchema } from '../../src/tools/schema.ts';
import { tool } from '../../src/tools/tool.ts';
import { scriptedModel } from '../support/scripted-model.ts';

const base = { description: 'Weather for a city', capabilityScopes: [], kind: 'read', effect: 'read-only' } as const;

type City = { city: string };
/** The shape of a Standard Schema (v1, with the JSON Schema converter), as valibot, arktype and others produce. */
interface CityStandardSchema {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => { readonly value: City; readonly issues?: undefined } | { readonly issues: ReadonlyArray<{ message: string; path?: ReadonlyArray<PropertyKey> }> };
    readonly jsonSchema: { readonly input: (options: unknown) => Record<string, unknown>; readonly output: (options: unknown) => Record<string, unknown> };
    readonly types?: { readonly input: City; readonly output: City } | undefined;
  };
}

/** A Standard Schema written by hand. */
function cityStandardSchema(): CityStandardSchema {
  return {
    '~standard': {
      version: 1 as const,
      vendor: 'hand-made',
      validate: (value: unknown) =>
        typeof value === 'object' && value !== null && typeof (value as { city?: unknown }).city === 'string'
          ? { value: value as City }
          : { issues: [{ message: 'city must be a string', path: ['city'] }] },
      jsonSchema: { input: () => ({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }), output: () => ({}) },
    },
  };
}

// ---- type level (checked by tsc) ------------------------------------------------------------

tool({
  ...base,
  name: 'zod4',
  inputSchema: z.object({ city: z.string() }),
  execute: ({ city }) => city.toUpperCase(),
});
tool({
  ...base,
  name: 'zod4_typo',
  inputSchema: z.object({ city: z.string() }),
  // @ts-expect-error -- `ctiy` is not a field of the zod 4 schema
  execute: ({ ctiy }) => String(ctiy),
});
tool({
  ...base,
  name: 'zod3',
  inputSchema: z3.object({ city: z3.string() }),
  execute: ({ city }) => city.toUpperCase(),
});
tool({
  ...base,
  name: 'zod3_typo',
  inputSchema: z3.object({ city: z3.string() }),
  // @ts-expect-error -- `ctiy` is not a field of the zod 3 schema
  execute: ({ ctiy }) => String(ctiy),
});
tool({
  ...base,
  name: 'standard',
  inputSchema: cityStandardSchema(),
  execute: ({ city }) => city.toUpperCase(),
});
tool({
  ...base,
  name: 'standard_typo',
  inputSchema: cityStandardSchema(),
  // @ts-expect-error -- `ctiy` is not a field of the Standard Schema's output type
  execute: ({ ctiy }) => String(ctiy),
});
tool({
  ...base,
  name: 'sdk',
  inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }),
  execute: ({ city }) => city.toUpperCase(),
});
tool({
  ...base,
  name: 'sdk_typo',
  inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }),
  // @ts-expect-error -- `ctiy` is not a field of the jsonSchema<T>() type
  execute: ({ ctiy }) => String(ctiy),
});
// A plain JSON Schema infers nothing; the input type is named instead, and then checked.
tool<{ city: string }>({
  ...base,
  name: 'json',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
  // @ts-expect-error -- `ctiy` is not a field of the named input type
  execute: ({ ctiy }) => String(ctiy),
});

// ---- run time -------------------------------------------------------------------------------

describe('schemas written in code, at run time', () => {
  const cases = {
    'zod 3': z3.object({ city: z3.string() }),
    'a Standard Schema': cityStandardSchema(),
    'an AI SDK jsonSchema()': jsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
  };
  for (const [label, schema] of Object.entries(cases)) {
    it(`${label}: one JSON Schema for the model, and a validator that names the bad field`, () => {
      const normalized = normalizeSchema(schema);
      expect(normalized.jsonSchema).toMatchObject({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
      expect(normalized.jsonSchema).not.toHaveProperty('$schema');
      expect(normalized.validate({ city: 'Paris' })).toEqual({ ok: true, value: { city: 'Paris' } });
      const bad = normalized.validate({ city: 7 });
      expect(bad.ok).toBe(false);
      expect(bad.errors?.[0]).toMatch(/^\/(city)?: /);
    });
  }

  it('converts a code schema once however many engines use it', () => {
    const city = z.object({ city: z.string() });
    const first = normalizeSchema(city);
    expect(normalizeSchema(city)).toBe(first);
    expect(normalizeSchema(z.object({ city: z.string() }))).not.toBe(first);
    expect(first.validate({ city: 7 }).ok).toBe(false);
  });

  it('a tool with a zod 3 schema runs in a turn (no crash), its input validated and typed', async () => {
    const seen: string[] = [];
    const weather = tool({
      ...base,
      name: 'weather',
      inputSchema: z3.object({ city: z3.string() }),
      execute: ({ city }) => (seen.push(city), `sunny in ${city}`),
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'weather', input: { city: 'Paris' } }] }, { text: 'It is sunny.' }]);
    const home = mkdtempSync(join(tmpdir(), 'acx-tool-types-'));
    const agent = new HarnessAgent({ harness: createEngineHarness({ model: fromLanguageModel(model), home }), tools: [weather] });
    const result = await agent.generate({ prompt: 'weather in Paris?' });
    expect(seen).toEqual(['Paris']);
    expect(result.toolResults.map((r) => r.output)).toEqual(['sunny in Paris']);
    expect(result.text).toBe('It is sunny.');
    const offered = (model.calls[0]!.tools ?? []).find((t) => t.name === 'weather') as { inputSchema?: unknown } | undefined;
    expect(offered?.inputSchema).toMatchObject({ type: 'object', properties: { city: { type: 'string' } } });
  });
});
