import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { LineCounter, parseDocument, type YAMLError } from 'yaml';
import { z } from 'zod';
import { ConfigError, errorMessage } from '../core/errors.ts';
import { withoutIds } from '../contract/ajv.ts';
import { readCassette } from '../model/cassette.ts';
import { parseModelSpec } from '../model/providers.ts';
import { type JsonSchema, normalizeSchema } from '../tools/schema.ts';

/**
 * An eval suite (docs/eval.md): cases, each a prompt and the properties its reply must have. The
 * file is YAML (JSON is YAML too); `loadSuite` checks it all before anything runs — the schema
 * below, then what a schema cannot say (a regular expression compiles, a JSON Schema is one, a
 * cassette is readable, a rubric has a judge) — and names the line, the case and the field of
 * every problem it finds.
 */

export interface ToolCallExpectation {
  name: string;
  /** The call's arguments: all of them (`exact`) or these among others (`subset`, the default). */
  args?: Record<string, unknown>;
  match: 'subset' | 'exact';
  /** A JSON Schema the call's arguments must be valid for. */
  argsSchema?: JsonSchema;
}

export interface TextPattern {
  pattern: string;
  flags: string;
}

export interface RubricExpectation {
  criteria: string;
  /** The judge's model, `provider:model-id` (the rubric's own, else the suite's). */
  judge: string;
}

export interface CaseExpectations {
  textContains: string[];
  textMatches: TextPattern[];
  /** Each must have been called at least once with matching arguments. */
  toolCalled: ToolCallExpectation[];
  /** `true`: no tool at all; a list: none of these tools. */
  noToolCalled?: true | string[];
  /** The case asks for structured output with this schema, and its output must be valid for it. */
  outputSchema?: JsonSchema;
  rubric?: RubricExpectation;
}

export interface EvalCase {
  name: string;
  prompt: string;
  /** An absolute path to a cassette the case's model replies are replayed from; absent: live. */
  replay?: string;
  expect: CaseExpectations;
}

export interface EvalSuite {
  name: string;
  /** The file it was read from, when it was. */
  path?: string;
  cases: EvalCase[];
}

const text = () => z.string({ error: 'must be text' }).trim().min(1, { error: 'must not be empty' });
/** One value or a list of them: the file may write either. */
const oneOrMore = <T extends z.ZodType>(item: T) =>
  z.preprocess((value) => (Array.isArray(value) ? value : value === undefined ? value : [value]), z.array(item).min(1, { error: 'must not be an empty list' }));
/** A map that may also be written as its main field alone: `memory_write` for `{name: memory_write}`. */
const orShorthand = <T extends z.ZodType>(field: string, map: T) => z.preprocess((value) => (typeof value === 'string' ? { [field]: value } : value), map);
const jsonSchemaObject = () => z.record(z.string(), z.unknown(), { error: 'must be a JSON Schema (an object such as {type: object, required: [id]})' });

const toolCall = orShorthand(
  'name',
  z.strictObject(
    {
      name: text(),
      args: z.record(z.string(), z.unknown(), { error: 'must be an object of the call\'s arguments, e.g. {path: notes.md}' }).optional(),
      match: z.enum(['subset', 'exact'], { error: 'must be "subset" (these arguments among others, the default) or "exact" (all of them)' }).default('subset'),
      argsSchema: jsonSchemaObject().optional(),
    },
    { error: 'must be a tool name or {name, args, match, argsSchema}' },
  ),
);

const pattern = orShorthand(
  'pattern',
  z.strictObject(
    {
      pattern: z.string({ error: 'must be text (a regular expression)' }).min(1, { error: 'must not be empty' }),
      flags: z.string({ error: 'must be text, e.g. i' }).regex(/^[dgimsuvy]*$/, { error: 'may hold only d, g, i, m, s, u, v and y' }).default(''),
    },
    { error: 'must be a regular expression or {pattern, flags}' },
  ),
);

const rubric = orShorthand(
  'criteria',
  z.strictObject(
    {
      criteria: text(),
      judge: text().optional(),
    },
    { error: 'must be the criteria as text, or {criteria, judge}' },
  ),
);

const expectations = z.strictObject(
  {
    textContains: oneOrMore(z.string({ error: 'must be text' }).min(1, { error: 'must not be empty' })).optional(),
    textMatches: oneOrMore(pattern).optional(),
    toolCalled: oneOrMore(toolCall).optional(),
    noToolCalled: z
      .union([z.literal(true), z.array(text()).min(1)], { error: 'must be true (no tool at all) or a list of tool names' })
      .optional(),
    outputSchema: jsonSchemaObject().optional(),
    rubric: rubric.optional(),
  },
  { error: 'must be a map of checks (textContains, textMatches, toolCalled, noToolCalled, outputSchema, rubric)' },
);

const suiteSchema = z.strictObject(
  {
    suite: text().optional(),
    judge: text().optional(),
    cases: z
      .array(
        z.strictObject(
          {
            name: text().optional(),
            prompt: text(),
            replay: text().optional(),
            expect: expectations,
          },
          { error: 'must be a map with a prompt and expect' },
        ),
        { error: 'must be a list of cases' },
      )
      .min(1, { error: 'must hold at least one case' }),
  },
  { error: 'the suite must be a map with cases (and optionally suite and judge)' },
);

type RawSuite = z.output<typeof suiteSchema>;
type Path = ReadonlyArray<PropertyKey>;

/** Where a problem is: the file and line, the case (by number and name) and the field. */
class Locator {
  private readonly lines = new LineCounter();
  private readonly source: string;
  readonly document;

  constructor(source: string, content: string) {
    this.source = source;
    this.document = parseDocument(content, { lineCounter: this.lines, uniqueKeys: true });
  }

  /** The line of the deepest node on the path that the file has (a missing field: its parent's). */
  lineOf(path: Path): number | undefined {
    for (let depth = path.length; depth >= 0; depth -= 1) {
      const node = this.document.getIn(path.slice(0, depth) as unknown[], true) as { range?: [number, number, number] } | undefined;
      if (node?.range) return this.lines.linePos(node.range[0]).line;
    }
    return undefined;
  }

  /** `suite.yaml:12: case 2 ("name"): expect.toolCalled[0].name: …`, and its line for ordering. */
  describe(path: Path, problem: string, raw: unknown): Problem {
    const line = this.lineOf(path);
    const where = [`${this.source}${line ? `:${line}` : ''}`];
    let rest = path;
    if (path[0] === 'cases' && typeof path[1] === 'number') {
      const name = (raw as { cases?: Array<{ name?: unknown }> })?.cases?.[path[1]]?.name;
      where.push(`case ${path[1] + 1}${typeof name === 'string' ? ` (${JSON.stringify(name)})` : ''}`);
      rest = path.slice(2);
    }
    const field = fieldName(rest, raw, path.slice(0, path.length - rest.length));
    if (field) where.push(field);
    return { line: line ?? 0, text: `${where.join(': ')}: ${problem}` };
  }
}

/**
 * The value at a checked path in the file as written. A check that takes one value or a list
 * (oneOrMore) puts an index on the path even where the file wrote a single value: that index
 * names the value itself.
 */
function step(node: unknown, key: PropertyKey): unknown {
  if (typeof key === 'number' && !Array.isArray(node)) return node;
  return (node as Record<PropertyKey, unknown> | null | undefined)?.[key];
}
const valueAt = (raw: unknown, path: Path): unknown => path.reduce(step, raw);

/** `expect.toolCalled[0].name`; an index the file did not write (a single value, not a list) is left out. */
function fieldName(rest: Path, raw: unknown, prefix: Path): string {
  let name = '';
  let node = valueAt(raw, prefix);
  for (const key of rest) {
    if (typeof key !== 'number') name += name ? `.${String(key)}` : String(key);
    else if (Array.isArray(node)) name += `[${key}]`;
    node = step(node, key);
  }
  return name;
}

const HINT = 'The suite format: docs/eval.md.';
const MAX_PROBLEMS = 10;

interface Problem {
  line: number;
  text: string;
}

/** The problems in the order of the file's lines (a sort is stable: one line's keep their order). */
function suiteError(found: Problem[]): ConfigError {
  const problems = [...found].sort((a, b) => a.line - b.line).map((problem) => problem.text);
  const shown = problems.slice(0, MAX_PROBLEMS);
  if (problems.length > shown.length) shown.push(`… and ${problems.length - shown.length} more`);
  return new ConfigError(`The eval suite is not valid:\n  ${shown.join('\n  ')}`, { hint: HINT });
}

function issueText(issue: z.core.$ZodIssue, raw: unknown): string {
  if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  if (issue.code === 'invalid_type' && valueAt(raw, issue.path) === undefined) return 'missing';
  return issue.message;
}

/** Reads and checks a suite file; relative cassette paths are relative to the file. */
export function loadSuite(path: string): EvalSuite {
  let content: string;
  try {
    content = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`Cannot read the eval suite ${path}: ${errorMessage(error)}`, { hint: 'Pass the path of a suite file (YAML); its format: docs/eval.md.' });
  }
  return parseSuite(content, { source: path, baseDir: dirname(resolve(path)), name: basename(path, extname(path)) });
}

/**
 * Checks a suite's text (YAML or JSON). `source` names it in messages; `baseDir` is where a
 * relative cassette path starts (default the working directory); `name` is the suite's name when
 * it sets none.
 */
export function parseSuite(content: string, options: { source?: string; baseDir?: string; name?: string } = {}): EvalSuite {
  const source = options.source ?? 'suite';
  const locator = new Locator(source, content);
  if (locator.document.errors.length > 0) {
    // The parser's message ends "at line L, column C:" and a code frame; the line goes in front instead.
    const yamlProblem = (error: YAMLError): Problem => {
      const line = error.linePos?.[0].line;
      return { line: line ?? 0, text: `${source}${line ? `:${line}` : ''}: ${error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')} (not valid YAML)` };
    };
    throw suiteError(locator.document.errors.map(yamlProblem));
  }
  const raw: unknown = locator.document.toJS();
  const parsed = suiteSchema.safeParse(raw);
  if (!parsed.success) throw suiteError(parsed.error.issues.map((issue) => locator.describe(issue.path, issueText(issue, raw), raw)));
  const problems: Problem[] = [];
  const problem = (path: Path, message: string) => problems.push(locator.describe(path, message, raw));
  const suite = checkMeaning(parsed.data, options.baseDir ?? process.cwd(), problem);
  if (problems.length > 0) throw suiteError(problems);
  return {
    name: parsed.data.suite ?? options.name ?? 'suite',
    ...(options.source ? { path: options.source } : {}),
    cases: suite,
  };
}

/** What the schema cannot say, case by case; each problem is reported with its path. */
function checkMeaning(raw: RawSuite, baseDir: string, problem: (path: Path, message: string) => void): EvalCase[] {
  const judge = raw.judge;
  if (judge !== undefined) checkModelSpec(judge, ['judge'], problem);
  const seen = new Map<string, number>();
  return raw.cases.map((entry, index) => {
    const at = (...path: PropertyKey[]): Path => ['cases', index, ...path];
    const name = entry.name ?? `case ${index + 1}`;
    const earlier = seen.get(name);
    if (earlier !== undefined) problem(at('name'), `the name "${name}" is case ${earlier + 1}'s too; give each case its own name`);
    seen.set(name, index);
    const e = entry.expect;
    if (Object.values(e).every((value) => value === undefined)) problem(at('expect'), 'expects nothing: add at least one check');
    e.textMatches?.forEach((p, i) => {
      try {
        new RegExp(p.pattern, p.flags);
      } catch (error) {
        problem(at('expect', 'textMatches', i), `not a valid regular expression: ${errorMessage(error)}`);
      }
    });
    e.toolCalled?.forEach((call, i) => {
      if (call.argsSchema) checkJsonSchema(call.argsSchema, at('expect', 'toolCalled', i, 'argsSchema'), problem);
    });
    if (e.outputSchema) checkJsonSchema(e.outputSchema, at('expect', 'outputSchema'), problem);
    let rubricJudge: string | undefined;
    if (e.rubric) {
      rubricJudge = e.rubric.judge ?? judge;
      if (e.rubric.judge !== undefined) checkModelSpec(e.rubric.judge, at('expect', 'rubric', 'judge'), problem);
      else if (judge === undefined) problem(at('expect', 'rubric'), 'a rubric needs a judge model: set judge: provider:model-id on the suite, or write {criteria, judge}');
    }
    let replay: string | undefined;
    if (entry.replay !== undefined) {
      replay = resolve(baseDir, entry.replay);
      if (!existsSync(replay)) problem(at('replay'), `no cassette at ${replay} (a relative path starts at the suite file's directory)`);
      else {
        try {
          readCassette(replay);
        } catch (error) {
          problem(at('replay'), errorMessage(error));
        }
      }
    }
    return {
      name,
      prompt: entry.prompt,
      ...(replay ? { replay } : {}),
      expect: {
        textContains: e.textContains ?? [],
        textMatches: e.textMatches ?? [],
        toolCalled: (e.toolCalled ?? []).map((call) => ({
          name: call.name,
          match: call.match,
          ...(call.args ? { args: call.args } : {}),
          ...(call.argsSchema ? { argsSchema: withoutIds(call.argsSchema as JsonSchema) as JsonSchema } : {}),
        })),
        ...(e.noToolCalled !== undefined ? { noToolCalled: e.noToolCalled } : {}),
        ...(e.outputSchema ? { outputSchema: withoutIds(e.outputSchema as JsonSchema) as JsonSchema } : {}),
        ...(e.rubric && rubricJudge ? { rubric: { criteria: e.rubric.criteria, judge: rubricJudge } } : {}),
      },
    };
  });
}

function checkModelSpec(spec: string, path: Path, problem: (path: Path, message: string) => void): void {
  try {
    parseModelSpec(spec);
  } catch (error) {
    problem(path, `${errorMessage(error)} (write provider:model-id, e.g. openai:gpt-5.4-mini)`);
  }
}

function checkJsonSchema(schema: Record<string, unknown>, path: Path, problem: (path: Path, message: string) => void): void {
  try {
    // Compiled now (a trial validation), so a $ref that leads nowhere is found before anything runs.
    normalizeSchema(withoutIds(schema as JsonSchema) as JsonSchema).validate(null);
  } catch (error) {
    problem(path, errorMessage(error));
  }
}
