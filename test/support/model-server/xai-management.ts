// xAI's Management API (management-api.x.ai), the account surface beside inference, as far as the
// account-balance tool reads it: GET /auth/management-keys/validation (the team a management key
// acts for) and GET /v1/billing/teams/{team_id}/prepaid/balance (the prepaid ledger: `total.val`,
// a string of USD cents whose sign is inverted, credit added negative). Served under its own base
// URL (`${url}/xai-management`). A key is known or 401; a key without BillingRead is 403; a team
// path segment that is not a uuid is 400 "Invalid uuid", as xAI answers.
import type http from 'node:http';

export const XAI_MANAGEMENT_PREFIX = '/xai-management';

export interface XaiManagementAccount {
  /** Management keys: the team each acts for and whether it has BillingRead. */
  keys: Map<string, { teamId: string; billingRead: boolean }>;
  /** The prepaid ledger's total per team, as xAI states it: cents, credit added negative. */
  balanceCents: Map<string, string>;
  /** Every request, as `METHOD path`. */
  requests: string[];
  /** Answers every request with this status instead (an outage), until cleared. */
  failWith: number | undefined;
  reset(): void;
}

export function createXaiManagement(): XaiManagementAccount & { handle(req: http.IncomingMessage, res: http.ServerResponse): boolean } {
  const account = {
    keys: new Map<string, { teamId: string; billingRead: boolean }>(),
    balanceCents: new Map<string, string>(),
    requests: [] as string[],
    failWith: undefined as number | undefined,
    reset() {
      account.keys.clear();
      account.balanceCents.clear();
      account.requests.length = 0;
      account.failWith = undefined;
    },
    handle(req: http.IncomingMessage, res: http.ServerResponse): boolean {
      const path = (req.url ?? '/').split('?')[0]!;
      if (!path.startsWith(`${XAI_MANAGEMENT_PREFIX}/`)) return false;
      const route = path.slice(XAI_MANAGEMENT_PREFIX.length);
      account.requests.push(`${req.method} ${route}`);
      const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (account.failWith !== undefined) return send(account.failWith, { error: 'unavailable' }), true;
      const key = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const holder = key ? account.keys.get(key) : undefined;
      if (!holder) return send(401, { error: 'Invalid management key' }), true;
      if (req.method === 'GET' && route === '/auth/management-keys/validation') return send(200, { teamId: holder.teamId, scopes: holder.billingRead ? ['BillingRead'] : [] }), true;
      const balance = /^\/v1\/billing\/teams\/([^/]+)\/prepaid\/balance$/.exec(route);
      if (req.method === 'GET' && balance) {
        const team = decodeURIComponent(balance[1]!);
        if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(team)) return send(400, { error: 'Invalid uuid' }), true;
        if (!holder.billingRead || team !== holder.teamId) return send(403, { error: 'The management key lacks BillingRead for this team' }), true;
        const total = account.balanceCents.get(team) ?? '0';
        return send(200, { changes: [{ amount: { val: total }, changeOrigin: 'PURCHASE' }], total: { val: total } }), true;
      }
      return send(404, { error: `no route ${req.method} ${route}` }), true;
    },
  };
  return account;
}
