import { z } from 'zod';
import { errorMessage } from '../../core/errors.ts';
import { addLiveSecret } from '../../util/scrub.ts';
import type { PolicyTool } from '../policy.ts';
import { lazySchema } from '../../core/lazy-schema.ts';

/**
 * `xai_account_balance`: the prepaid credit left on the agent's own xAI account, so a cost-aware
 * agent can reason about its runway. It reads xAI's Management API (a billing surface beside
 * inference) with its own read-only credential, XAI_MANAGEMENT_KEY (scope BillingRead), never the
 * inference key; the team is XAI_TEAM_ID, else the one the key acts for (asked once, then kept).
 * Opt-in, offered on the xAI provider only.
 *
 * It never derails a turn: no key, a refused key, an unreachable endpoint or an unexpected answer
 * all come back as `xAI account balance unavailable — <reason>`. It returns one figure: never the
 * key, never the ledger (whose history of purchases is no business of the model's), never a body
 * of the API's.
 */
export interface XaiBalanceOptions {
  /** Where XAI_MANAGEMENT_KEY, XAI_TEAM_ID and XAI_MANAGEMENT_BASE_URL are read, at each call. */
  env?: NodeJS.ProcessEnv;
  /** Per-request timeout (default 15 s): a billing read must not hold up a turn for long. */
  timeoutMs?: number;
  now?: () => Date;
}

export const XAI_MANAGEMENT_BASE_URL = 'https://management-api.x.ai';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A reason the balance could not be read, safe to show the model. */
class Unavailable extends Error {}

const balanceInput = lazySchema(() => z.strictObject({}));

export function createXaiBalanceTool(options: XaiBalanceOptions = {}): PolicyTool {
  const discovered = new Map<string, string>();
  return {
    name: 'xai_account_balance',
    description:
      'The prepaid credit left on your own xAI account, in US dollars: to reason about your runway (do cheaper work, or ask for a top-up before you run dry). ' +
      'Takes no arguments and reads only your own balance.',
    inputSchema: balanceInput(),
    capabilityScopes: ['net.fetch'],
    kind: 'fetch',
    effect: 'read-only',
    optIn: true,
    async execute(_input, context) {
      const env = options.env ?? process.env;
      const key = env.XAI_MANAGEMENT_KEY?.trim();
      if (!key) return 'xAI account balance unavailable — XAI_MANAGEMENT_KEY is not set (a read-only xAI Management Key, console.x.ai → Settings → Management Keys).';
      addLiveSecret(key);
      const base = (env.XAI_MANAGEMENT_BASE_URL?.trim() || XAI_MANAGEMENT_BASE_URL).replace(/\/+$/, '');
      const get = async (path: string, doing: string): Promise<Record<string, unknown>> => {
        const signal = AbortSignal.any([context.abortSignal, AbortSignal.timeout(options.timeoutMs ?? 15_000)]);
        let response: Response;
        try {
          response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}`, accept: 'application/json' }, signal, redirect: 'error' });
        } catch (error) {
          throw new Unavailable(`the xAI Management API could not be reached (${errorMessage(error)}).`);
        }
        if (response.status === 401 || response.status === 403) {
          throw new Unavailable(`the xAI Management API refused the key (HTTP ${response.status}); it needs read-only billing scope (BillingRead). Check XAI_MANAGEMENT_KEY.`);
        }
        if (!response.ok) throw new Unavailable(`the xAI Management API answered HTTP ${response.status} trying to ${doing}.`);
        const body = (await response.json().catch(() => undefined)) as unknown;
        if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Unavailable(`the xAI Management API gave an unexpected answer trying to ${doing}.`);
        return body as Record<string, unknown>;
      };
      try {
        const team = await teamOf(env, key, discovered, get);
        const ledger = await get(`/v1/billing/teams/${encodeURIComponent(team)}/prepaid/balance`, 'read the prepaid balance');
        return render(balanceUsd(ledger), (options.now ?? (() => new Date()))());
      } catch (error) {
        if (error instanceof Unavailable) return `xAI account balance unavailable — ${error.message}`;
        throw error;
      }
    },
  };
}

/** XAI_TEAM_ID, else the team the key acts for (asked once per key). The balance path takes a uuid, never "default". */
async function teamOf(env: NodeJS.ProcessEnv, key: string, discovered: Map<string, string>, get: (path: string, doing: string) => Promise<Record<string, unknown>>): Promise<string> {
  const given = env.XAI_TEAM_ID?.trim();
  if (given) {
    if (!UUID.test(given)) throw new Unavailable(`XAI_TEAM_ID must be your team's uuid, not "${given}"; or leave it unset to find the team from the key.`);
    return given;
  }
  const known = discovered.get(key);
  if (known) return known;
  const team = (await get('/auth/management-keys/validation', 'find the team of the key')).teamId;
  if (typeof team !== 'string' || !UUID.test(team)) throw new Unavailable('the xAI Management API named no team for this key; set XAI_TEAM_ID to your team uuid.');
  discovered.set(key, team);
  return team;
}

/**
 * The available balance in dollars. xAI states the ledger's total as `total.val`, a string of
 * USD cents whose sign is inverted (credit added is negative, credit spent positive).
 */
function balanceUsd(ledger: Record<string, unknown>): number {
  const total = ledger.total as { val?: unknown } | undefined;
  const cents = typeof total?.val === 'string' || typeof total?.val === 'number' ? Number(total.val) : Number.NaN;
  if (!Number.isInteger(cents)) throw new Unavailable('the xAI Management API stated no balance total.');
  return -cents / 100;
}

function render(dollars: number, now: Date): string {
  const amount = `$${Math.abs(dollars).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  const figure = dollars < 0 ? `-${amount} (the account is overdrawn)` : amount;
  return `xAI prepaid credit balance: ${figure} USD (as of ${now.toISOString().replace(/\.\d{3}Z$/, 'Z')}).`;
}
