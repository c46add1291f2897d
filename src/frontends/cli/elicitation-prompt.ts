import type { ElicitationField, ElicitationRequest, ElicitationResult, ElicitationValue } from '../../core/elicitation.ts';

/**
 * An MCP server's question (elicitation), asked at `acx chat`'s prompt as approvals are: the
 * message, whether to answer at all, then each field in turn — its title, its kind, the choices
 * and the default. A blank line takes the default (or leaves an optional field out); an answer
 * that does not fit the field says why and asks again. Ctrl-C (the turn cancelled) cancels.
 */
export type Ask = (question: string) => Promise<string | undefined>;

export async function askElicitation(request: ElicitationRequest, ask: Ask, write: (text: string) => void): Promise<ElicitationResult> {
  write(`\n? ${request.server} asks (during ${request.toolName}): ${request.message}\n`);
  const fields = Object.entries(request.requestedSchema.properties);
  const consent = await ask(fields.length > 0 ? '  answer? [y/N] ' : '  accept? [y/N] ');
  if (consent === undefined) return { action: 'cancel', reason: 'The user cancelled the turn.' };
  if (!/^y(es)?$/i.test(consent.trim())) return { action: 'decline', reason: 'The user declined.' };
  const required = new Set(request.requestedSchema.required ?? []);
  const content: Record<string, ElicitationValue> = {};
  for (const [name, field] of fields) {
    for (;;) {
      const line = await ask(`  ${describeField(name, field, required.has(name))}: `);
      if (line === undefined) return { action: 'cancel', reason: 'The user cancelled the turn.' };
      const parsed = parseAnswer(line.trim(), field, required.has(name));
      if ('problem' in parsed) {
        write(`    ${parsed.problem}\n`);
        continue;
      }
      if (parsed.value !== undefined) content[name] = parsed.value;
      break;
    }
  }
  return { action: 'accept', content };
}

/** The choices a field offers: [value, title] pairs (a single or a multiple choice). */
function choicesOf(field: ElicitationField): Array<[string, string]> | undefined {
  const titled = field.oneOf ?? field.items?.anyOf;
  if (titled) return titled.map((choice) => [choice.const, choice.title]);
  const plain = field.enum ?? field.items?.enum;
  return plain?.map((value) => [value, value]);
}

function describeField(name: string, field: ElicitationField, required: boolean): string {
  const choices = choicesOf(field);
  const kind =
    field.type === 'boolean'
      ? 'y/n'
      : choices
        ? `${field.type === 'array' ? 'any of' : 'one of'} ${choices.map(([value, title]) => (title === value ? value : `${value} (${title})`)).join(', ')}`
        : field.type === 'string'
          ? 'text'
          : field.type;
  const fallback = field.default === undefined ? (required ? 'required' : 'optional') : `default ${field.type === 'boolean' ? (field.default ? 'y' : 'n') : String(field.default)}`;
  const about = field.description ? ` — ${field.description}` : '';
  return `${field.title ?? name}${about} (${kind}; ${fallback})`;
}

/** One answer as the field's value; blank keeps the default (undefined: the field is left out). */
export function parseAnswer(text: string, field: ElicitationField, required: boolean): { value: ElicitationValue | undefined } | { problem: string } {
  if (text === '') {
    if (field.default !== undefined) return { value: field.default as ElicitationValue };
    return required ? { problem: 'an answer is required' } : { value: undefined };
  }
  const choices = choicesOf(field);
  const pick = (word: string) => choices?.find(([value, title]) => value.toLowerCase() === word.toLowerCase() || title.toLowerCase() === word.toLowerCase())?.[0];
  switch (field.type) {
    case 'boolean':
      if (/^(y|yes|true)$/i.test(text)) return { value: true };
      if (/^(n|no|false)$/i.test(text)) return { value: false };
      return { problem: 'answer y or n' };
    case 'number':
    case 'integer': {
      const value = Number(text);
      if (!Number.isFinite(value) || (field.type === 'integer' && !Number.isInteger(value))) return { problem: `answer ${field.type === 'integer' ? 'a whole number' : 'a number'}` };
      if (field.minimum !== undefined && value < field.minimum) return { problem: `the least is ${field.minimum}` };
      if (field.maximum !== undefined && value > field.maximum) return { problem: `the most is ${field.maximum}` };
      return { value };
    }
    case 'array': {
      const words = text.split(',').map((word) => word.trim()).filter(Boolean);
      const picked = words.map(pick);
      const unknown = words.filter((_, i) => picked[i] === undefined);
      if (unknown.length > 0) return { problem: `not a choice: ${unknown.join(', ')}` };
      return { value: picked as string[] };
    }
    default: {
      if (choices) {
        const value = pick(text);
        return value === undefined ? { problem: `answer one of ${choices.map(([v]) => v).join(', ')}` } : { value };
      }
      if (field.minLength !== undefined && text.length < field.minLength) return { problem: `at least ${field.minLength} characters` };
      if (field.maxLength !== undefined && text.length > field.maxLength) return { problem: `at most ${field.maxLength} characters` };
      return { value: text };
    }
  }
}
