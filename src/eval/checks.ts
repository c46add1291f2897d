import { isDeepStrictEqual } from 'node:util';
import { normalizeSchema } from '../tools/schema.ts';
import type { CaseExpectations, ToolCallExpectation } from './suite.ts';

/**
 * The checks of a case that need no model: each expectation of the suite against what the turn
 * did — its final text, the tool calls the journal recorded, its structured output. Pure.
 */
export type CheckKind = 'textContains' | 'textMatches' | 'toolCalled' | 'noToolCalled' | 'outputSchema' | 'rubric';

export interface CheckResult {
  check: CheckKind;
  /** What was expected, in a few words (`memory_write {key: "x"} (subset)`). */
  expected: string;
  passed: boolean;
  /** Why it passed or failed, for a person reading the report. */
  detail: string;
}

export interface TurnOutcome {
  text: string;
  toolCalls: ReadonlyArray<{ toolName: string; input: unknown }>;
  output: unknown;
}

const MAX_SHOWN = 200;
const show = (value: unknown): string => {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > MAX_SHOWN ? `${json.slice(0, MAX_SHOWN - 1)}…` : json;
};

export function runChecks(expect: CaseExpectations, outcome: TurnOutcome): CheckResult[] {
  const results: CheckResult[] = [];
  for (const needle of expect.textContains) {
    const passed = outcome.text.includes(needle);
    results.push({ check: 'textContains', expected: show(needle), passed, detail: passed ? 'the reply contains it' : 'the reply does not contain it' });
  }
  for (const { pattern, flags } of expect.textMatches) {
    const passed = new RegExp(pattern, flags).test(outcome.text);
    results.push({ check: 'textMatches', expected: `/${pattern}/${flags}`, passed, detail: passed ? 'the reply matches it' : 'the reply does not match it' });
  }
  for (const expected of expect.toolCalled) results.push(toolCalled(expected, outcome.toolCalls));
  if (expect.noToolCalled !== undefined) results.push(noToolCalled(expect.noToolCalled, outcome.toolCalls));
  if (expect.outputSchema) {
    const expected = 'output valid for the schema';
    if (outcome.output === undefined) results.push({ check: 'outputSchema', expected, passed: false, detail: 'the turn gave no structured output' });
    else {
      const validation = normalizeSchema(expect.outputSchema).validate(outcome.output);
      results.push({ check: 'outputSchema', expected, passed: validation.ok, detail: validation.ok ? 'it is' : `${show(outcome.output)} is not: ${(validation.errors ?? []).join('; ')}` });
    }
  }
  return results;
}

function describeCall(expected: ToolCallExpectation): string {
  const parts = [expected.name];
  if (expected.args) parts.push(`${show(expected.args)} (${expected.match})`);
  if (expected.argsSchema) parts.push('args valid for the schema');
  return parts.join(' ');
}

function calledNames(calls: TurnOutcome['toolCalls']): string {
  return calls.length === 0 ? 'no tool was called' : `the turn called ${[...new Set(calls.map((call) => call.toolName))].join(', ')}`;
}

function toolCalled(expected: ToolCallExpectation, calls: TurnOutcome['toolCalls']): CheckResult {
  const result = (passed: boolean, detail: string): CheckResult => ({ check: 'toolCalled', expected: describeCall(expected), passed, detail });
  const named = calls.filter((call) => call.toolName === expected.name);
  if (named.length === 0) return result(false, `${expected.name} was not called (${calledNames(calls)})`);
  const validator = expected.argsSchema ? normalizeSchema(expected.argsSchema) : undefined;
  const problems: string[] = [];
  for (const call of named) {
    const argsMatch = !expected.args || (expected.match === 'exact' ? isDeepStrictEqual(call.input, expected.args) : isSubset(expected.args, call.input));
    const validation = validator?.validate(call.input);
    if (argsMatch && (validation?.ok ?? true)) return result(true, `called with ${show(call.input)}`);
    problems.push(`${show(call.input)}${validation && !validation.ok ? ` (${(validation.errors ?? []).join('; ')})` : ''}`);
  }
  const times = named.length === 1 ? 'once' : `${named.length} times`;
  return result(false, `${expected.name} was called ${times}, never with matching arguments: ${problems.join(', ')}`);
}

function noToolCalled(expected: true | string[], calls: TurnOutcome['toolCalls']): CheckResult {
  if (expected === true) {
    const passed = calls.length === 0;
    return { check: 'noToolCalled', expected: 'no tool', passed, detail: passed ? 'no tool was called' : calledNames(calls) };
  }
  const called = [...new Set(calls.map((call) => call.toolName).filter((name) => expected.includes(name)))];
  const passed = called.length === 0;
  return { check: 'noToolCalled', expected: `none of ${expected.join(', ')}`, passed, detail: passed ? 'none of them was called' : `the turn called ${called.join(', ')}` };
}

/** Whether `actual` has every field of `expected`, recursively for objects; other values (lists too) must be equal. */
export function isSubset(expected: unknown, actual: unknown): boolean {
  if (!isPlainObject(expected)) return isDeepStrictEqual(expected, actual);
  if (!isPlainObject(actual)) return false;
  return Object.entries(expected).every(([key, value]) => key in actual && isSubset(value, actual[key]));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
