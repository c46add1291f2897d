import { APICallError, StreamProviderError } from 'ai';
import { PROVIDERS, type ResolvedModel } from '../model/providers.ts';
import { AcxError, type AcxErrorCode, errorMarker, setMarker } from '../core/errors.ts';
import { classifyFault, type FaultClass, isUnknownHost, networkCode, RATE_LIMIT_RETRIES, RATE_LIMIT_SLEEP_MS, retryAfterMs } from './faults.ts';

/** The codes of a provider's failure: `provider-auth`, `provider-rate-limited`, … */
export type ProviderErrorCode = Extract<AcxErrorCode, `provider-${string}`>;

const PROVIDER_ERROR = errorMarker('ProviderError');

/**
 * A model call that failed for good, said the way a user can act on it: what went wrong (which
 * provider, which HTTP status or network failure, the provider's own words) and what to do (the
 * variable or flag to fix). The original error is the `cause`; `fault` keeps the engine's
 * classification so a caller still tells an overflow from an outage.
 */
export class ProviderError extends AcxError {
  declare readonly code: ProviderErrorCode;
  readonly fault: FaultClass;
  readonly status: number | undefined;
  readonly attempts: number;

  constructor(code: ProviderErrorCode, message: string, options: { hint: string; cause: unknown; fault: FaultClass; status: number | undefined; attempts: number }) {
    super(code, message, { hint: options.hint, cause: options.cause });
    setMarker(this, PROVIDER_ERROR);
    this.name = 'ProviderError';
    this.fault = options.fault;
    this.status = options.status;
    this.attempts = options.attempts;
  }

  static override isInstance(error: unknown): error is ProviderError {
    return AcxError.hasMarker(error, PROVIDER_ERROR);
  }
}

export interface FailureContext {
  model: Pick<ResolvedModel, 'provider' | 'modelId' | 'baseURL'>;
  /** How many times the call was made, the failing one included. */
  attempts: number;
}

// The provider's "no such model" answers: OpenAI's model_not_found, Anthropic's "model: x",
// Gemini's "models/x is not found", and the plainer wordings OpenAI-compatible servers use.
const UNKNOWN_MODEL =
  /model_not_found|^model: |models\/\S+ is not found|model\b[^.]{0,80}\b(does not exist|not found|is not supported|unknown)|(unknown|invalid|unsupported) model/i;

/**
 * The failure of a model call as a ProviderError, or undefined when it is not a provider's
 * answer (a replay mismatch, an abort, a bug) and must reach the caller as it is.
 */
export function describeProviderFailure(error: unknown, context: FailureContext): ProviderError | undefined {
  if (ProviderError.isInstance(error)) return error;
  const fault = classifyFault(error);
  if (fault === 'aborted') return undefined;
  const api = APICallError.isInstance(error) ? error : undefined;
  const stream = StreamProviderError.isInstance(error) ? error : undefined;
  if (!api && !stream && fault !== 'transient-malformed') return undefined;

  const facts = providerFacts(context.model);
  const status = api?.statusCode ?? stream?.statusCode;
  const said = providerMessage(api?.message ?? stream?.message ?? (error as Error).message);
  const tried = context.attempts > 1 ? `, after ${context.attempts} attempts` : '';
  const make = (code: ProviderErrorCode, message: string, hint: string) =>
    new ProviderError(code, message, { hint, cause: error, fault, status, attempts: context.attempts });
  // "<what happened> (HTTP <status>, after N attempts): <the provider's own words>"
  const answered = (what: string) => `${what} (${status !== undefined ? `HTTP ${status}` : 'in the response stream'}${tried}): ${said}`;

  if (api && status === undefined) {
    const where = facts.configuredUrl ?? originOf(api.url);
    if (isUnknownHost(api)) {
      const host = hostOf(facts.configuredUrl ?? api.url);
      return make(
        'provider-unknown-host',
        `Cannot reach ${facts.label}: the host ${host ? `"${host}" ` : ''}does not exist (DNS lookup failed for ${where}).`,
        facts.configuredUrl
          ? `Check the host name in ${facts.baseUrlSetting}; it is set to ${facts.configuredUrl}.`
          : 'Check your network connection and DNS settings.',
      );
    }
    return make(
      'provider-unreachable',
      `Cannot connect to ${facts.label} at ${where}: ${transportReason(api)}${tried}.`,
      facts.configuredUrl
        ? `Check that the server is running and that ${facts.baseUrlSetting} points at it.`
        : 'Check your network connection (and any proxy or firewall between you and the provider), then try again.',
    );
  }

  if (fault === 'context-overflow') {
    return make(
      'provider-context-overflow',
      answered(`${facts.label} says the conversation is longer than the model's context window`),
      "Set --context-tokens (ACX_MAX_CONTEXT_TOKENS) to the model's window so acx compacts in time, or start a new --session.",
    );
  }
  if (status === 401) {
    return make(
      'provider-auth',
      answered(`${facts.label} rejected the API key`),
      facts.keySetting
        ? `Check ${facts.keySetting}: it must hold a valid ${facts.label} API key${facts.configuredUrl ? ` for ${facts.configuredUrl}` : ''}.`
        : 'Check the API key the model was created with.',
    );
  }
  if (status === 403) {
    return make(
      'provider-forbidden',
      answered(`${facts.label} refused access`),
      `The key${facts.keySetting ? ` in ${facts.keySetting}` : ''} is valid but may not do this: check that its account, project or region may use the model "${context.model.modelId}".`,
    );
  }
  if ((status === 404 || status === 400) && UNKNOWN_MODEL.test(`${said} ${api?.responseBody ?? ''}`)) {
    return make(
      'provider-model-not-found',
      answered(`${facts.label} has no model "${context.model.modelId}"`),
      `Check the model id in --model ${context.model.provider}:${context.model.modelId} (or ACX_MODEL, or agent.json's model) against ${facts.label}'s list of models.`,
    );
  }
  if (status === 404) {
    return make(
      'provider-not-found',
      answered(`${facts.label} has no model API at ${api ? api.url : (facts.configuredUrl ?? 'its endpoint')}`),
      `Check ${facts.baseUrlSetting}${facts.configuredUrl ? ` (now ${facts.configuredUrl})` : ''}; an OpenAI-compatible server's base URL usually ends in /v1.`,
    );
  }
  if (status === 429) {
    if (fault === 'permanent') {
      return make(
        'provider-quota',
        answered(`${facts.label} says the account is out of quota`),
        `Add credit or raise the limits of the ${facts.label} account${facts.keySetting ? ` behind ${facts.keySetting}` : ''}; retrying will not help.`,
      );
    }
    const wait = retryAfterMs(error);
    return make(
      'provider-rate-limited',
      answered(`${facts.label} is rate-limiting requests`),
      `${wait !== undefined && wait > 0 ? `It asks to wait ${seconds(wait)} before the next request: wait that long` : 'Wait a minute'} and run again, or check the rate limits of your plan. acx retries a 429 at most ${RATE_LIMIT_RETRIES} times within ${RATE_LIMIT_SLEEP_MS / 1000} s.`,
    );
  }
  if (status !== undefined && status >= 500) {
    return make(
      'provider-server',
      answered(`${facts.label} failed with a server error`),
      `The fault is on ${facts.label}'s side: try again later. ACX_RESPONSE_RETRIES sets how many times acx retries it (default 2).`,
    );
  }
  if (fault === 'transient-malformed') {
    return make(
      'provider-malformed',
      `${facts.label} sent a response acx could not read${context.attempts > 1 ? ` (${context.attempts} attempts)` : ''}: ${said}`,
      `Try again; if it keeps happening, the endpoint may not speak this wire format (for an OpenAI-compatible server, try --surface chat).`,
    );
  }
  return make(
    'provider-rejected',
    answered(`${facts.label} rejected the request`),
    `A model setting may not suit this model: check --param, model_params.json and the model id "${context.model.modelId}".`,
  );
}

interface ProviderFacts {
  label: string;
  /** The variable (or variables) that hold the key, for the hint. */
  keySetting: string | undefined;
  /** How the user sets the endpoint: the variable and the flag. */
  baseUrlSetting: string;
  /** The endpoint the user configured (flag, variable or a local server's default), when there is one. */
  configuredUrl: string | undefined;
}

function providerFacts(model: FailureContext['model']): ProviderFacts {
  const definition = PROVIDERS[model.provider];
  const keyEnv = definition?.keyEnv ?? [];
  return {
    label: definition?.label ?? `the ${model.provider} provider`,
    keySetting: keyEnv.length > 0 ? keyEnv.join(' or ') : undefined,
    baseUrlSetting: definition?.baseUrlEnv ? `${definition.baseUrlEnv} (or --base-url)` : 'the base URL',
    configuredUrl: model.baseURL,
  };
}

/** The provider's own words, flattened to one line and kept short. */
function providerMessage(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

/** Why a request never got an answer, in words (connection refused, reset, timed out). */
function transportReason(error: APICallError): string {
  const code = networkCode(error);
  switch (code) {
    case 'ECONNREFUSED':
      return 'the connection was refused';
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed before an answer';
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
      return 'the connection timed out';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'the network cannot reach the host';
    case 'EAI_AGAIN':
      return 'the host name could not be looked up (DNS is not answering)';
    default:
      return providerMessage(error.message.replace(/^Cannot connect to API:\s*/, '')) || 'the request never got an answer';
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

function seconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}
