// Which failures mean "the server is not there yet" (wait for it, retry once it is back) and
// which are answers about the request (waiting never fixes them). A worker that misreads one
// fails a job PostgreSQL cannot record as failed: the job then sits active until its heartbeat
// lapses, holding back its session's next jobs; a wake counts the failure toward setting its
// message aside. The whole path (a real restart) is in test/frontends/worker/queue-outage.test.ts.
import { describe, expect, it } from 'vitest';
import { AcxError } from '../../src/core/errors.ts';
import { nextWaitDelay, serverNotThereYet } from '../../src/store/postgres-wait.ts';

const systemError = (code: string, message: string) => Object.assign(new Error(message), { code });
/** As acx's stores wrap the driver's error. */
const wrapped = (cause: unknown) => new AcxError('store-open', `Cannot connect to the PostgreSQL store at postgres://acx@/db: ${(cause as Error).message}`, { cause });

describe('serverNotThereYet', () => {
  it.each([
    ['a refused connection', systemError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['a socket file not there', systemError('ENOENT', 'connect ENOENT /tmp/pg/.s.PGSQL.5432')],
    ['a connection reset', systemError('ECONNRESET', 'read ECONNRESET')],
    ['a query written to a connection the stopping server closed', systemError('EPIPE', 'write EPIPE')],
    ['an aborted connection', systemError('ECONNABORTED', 'write ECONNABORTED')],
    ['the server starting up', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['the server shutting down', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['a connection ended under the driver', new Error('Connection terminated unexpectedly')],
  ])('%s: yes, also wrapped in an AcxError', (_what, error) => {
    expect(serverNotThereYet(error)).toBe(true);
    expect(serverNotThereYet(wrapped(error))).toBe(true);
  });

  it.each([
    ['a wrong password', Object.assign(new Error('password authentication failed for user "acx"'), { code: '28P01' })],
    ['no such database', Object.assign(new Error('database "nope" does not exist'), { code: '3D000' })],
    ['a failed statement', Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' })],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'rows')")],
  ])('%s: no', (_what, error) => {
    expect(serverNotThereYet(error)).toBe(false);
    expect(serverNotThereYet(wrapped(error))).toBe(false);
  });
});

describe('nextWaitDelay', () => {
  it('doubles from the first delay and looks at least every second by default (a process waiting for its server has work waiting on it)', () => {
    const delays = [250];
    while (delays.length < 6) delays.push(nextWaitDelay(delays.at(-1)!));
    expect(delays).toEqual([250, 500, 1000, 1000, 1000, 1000]);
    expect(nextWaitDelay(100, 150), 'a cap the caller sets').toBe(150);
  });
});
