import { Assets } from './resources/assets.ts';
import { Messages } from './resources/messages.ts';
import { Sessions } from './resources/sessions.ts';
import { Tasks } from './resources/tasks.ts';
import { Timelines } from './resources/timelines.ts';
import { DashboardResource, TrustResource, Users } from './resources/users.ts';
import { WebhookEndpoints, WebhookEvents } from './resources/webhooks.ts';
import { Transport, type TransportOptions } from './transport.ts';

export type BaseCradleClientOptions = TransportOptions;

/**
 * A typed client for every operation of the BaseCradle REST API (openapi.yaml), grouped by
 * resource. Credentials are resolved on the first request that needs them (see auth.ts).
 *
 * ```ts
 * const bc = new BaseCradleClient({ baseUrl: 'http://127.0.0.1:4700' }); // token from BASECRADLE_TOKEN
 * const sent = await bc.messages.create(timeline, 'hello', { idempotencyKey: randomUUID() });
 * for await (const message of bc.messages.list({ timeline })) console.log(message.content.body);
 * ```
 */
export class BaseCradleClient {
  readonly transport: Transport;
  readonly timelines: Timelines;
  readonly messages: Messages;
  readonly assets: Assets;
  readonly tasks: Tasks;
  readonly users: Users;
  readonly trust: TrustResource;
  readonly dashboard: DashboardResource;
  readonly sessions: Sessions;
  readonly webhookEndpoints: WebhookEndpoints;
  readonly webhookEvents: WebhookEvents;

  constructor(options: BaseCradleClientOptions = {}) {
    this.transport = new Transport(options);
    this.timelines = new Timelines(this.transport);
    this.messages = new Messages(this.transport);
    this.assets = new Assets(this.transport);
    this.tasks = new Tasks(this.transport);
    this.users = new Users(this.transport);
    this.trust = new TrustResource(this.transport);
    this.dashboard = new DashboardResource(this.transport);
    this.sessions = new Sessions(this.transport);
    this.webhookEndpoints = new WebhookEndpoints(this.transport);
    this.webhookEvents = new WebhookEvents(this.transport);
  }

  get baseUrl(): string {
    return this.transport.baseUrl;
  }
}
