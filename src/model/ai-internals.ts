/**
 * The ONE module that touches the AI SDK's internals (`ai/internal`, not covered by its semver
 * promise). acx's model call reuses the SDK's own parts — option preparation, tool-call parsing,
 * content conversion, response messages, prompt conversion — so that a step is exactly what the
 * SDK's loop would make of it. Everything else imports them from here, so an `ai` upgrade that
 * renames or drops one fails in one place, with a message naming what is missing
 * (test/model/ai-internals.test.ts checks the installed `ai` provides every one).
 */
import * as internal from 'ai/internal';
import aiPackage from 'ai/package.json' with { type: 'json' };

/** Every `ai/internal` export acx uses. */
export const AI_INTERNALS_USED = [
  'asLanguageModelUsage',
  'convertLanguageModelContent',
  'convertToLanguageModelPrompt',
  'logWarnings',
  'parseToolCall',
  'prepareLanguageModelCallOptions',
  'prepareToolChoice',
  'prepareTools',
  'toResponseMessages',
] as const satisfies ReadonlyArray<keyof typeof internal>;

/** The names of AI_INTERNALS_USED that `module` (an `ai/internal` namespace) does not provide as functions. */
export function missingAiInternals(module: Readonly<Record<string, unknown>>): string[] {
  return AI_INTERNALS_USED.filter((name) => typeof module[name] !== 'function');
}

// Read by name, never as the namespace object: a bundle then keeps only these and what they use.
// The whole namespace would bring the SDK's gateway provider and its OIDC client along (through
// resolveLanguageModel, which resolves a model named by a string), ~160 KB that every start
// would load and no acx model call runs.
const used = {
  asLanguageModelUsage: internal.asLanguageModelUsage,
  convertLanguageModelContent: internal.convertLanguageModelContent,
  convertToLanguageModelPrompt: internal.convertToLanguageModelPrompt,
  logWarnings: internal.logWarnings,
  parseToolCall: internal.parseToolCall,
  prepareLanguageModelCallOptions: internal.prepareLanguageModelCallOptions,
  prepareToolChoice: internal.prepareToolChoice,
  prepareTools: internal.prepareTools,
  toResponseMessages: internal.toResponseMessages,
} satisfies Record<(typeof AI_INTERNALS_USED)[number], unknown>;

const missing = missingAiInternals(used);
if (missing.length > 0) {
  throw new Error(
    `The installed "ai" package (${aiPackage.version}) no longer exports ${missing.join(', ')} from "ai/internal", which acx's model call needs. ` +
      'Install an "ai" version in the range acx names in its package.json peerDependencies (npm ls ai shows which one is installed).',
  );
}

export const {
  asLanguageModelUsage,
  convertLanguageModelContent,
  convertToLanguageModelPrompt,
  logWarnings,
  parseToolCall,
  prepareLanguageModelCallOptions,
  prepareToolChoice,
  prepareTools,
  toResponseMessages,
} = used;
