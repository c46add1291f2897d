import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import { resolveStateHome } from '../../../app/paths.ts';
import { parseAgentList } from '../../router/agents.ts';
import { type RouterOptions, startRouter } from '../../router/router.ts';
import { addUser, hashPassword, listPlatformUsers, mintToken, startPlatform, suspendUser } from '../../../platform/index.ts';
import { type Logger } from '../../../util/logger.ts';
import { CliExit } from '../output.ts';
import { untilStopped } from '../until-stopped.ts';
import { readStdin } from '../stdin.ts';
import { commandLogger } from '../command-logger.ts';
import { noWarmOption, passEnvOption, replayWindowOption, resolveRouterFlags, type RouterFlags } from '../router-options.ts';
import { jsonOption } from '../common-options.ts';

/** The home every `acx platform` command works on. */
const platformHomeOption = (): Option => new Option('--home <dir>', 'platform home: its database and files (env ACX_PLATFORM_HOME; default <state home>/platform)');

/** The user a `platform user` command is about. */
const handleOption = (): Option => new Option('--handle <handle>', "the user's handle, how peers name it (@handle)").makeOptionMandatory();

/**
 * `acx platform serve|user …`: the embedded local platform (src/platform). This file only reads
 * flags and environment; the platform does the rest.
 */
export function register(program: Command): void {
  const platform = program.command('platform').description('the embedded local platform: a BaseCradle-compatible server with a web page (docs/platform.md)');
  const home = (options: { home?: string }) => options.home ?? process.env.ACX_PLATFORM_HOME ?? join(resolveStateHome(undefined), 'platform');

  platform
    .command('serve')
    .description('start the platform and print its URL; runs until interrupted')
    .option('--port <n>', 'port; 0 picks a free one (env ACX_PLATFORM_PORT; default 4700)', process.env.ACX_PLATFORM_PORT ?? '4700')
    .option('--host <addr>', 'address to listen on (env ACX_PLATFORM_HOST; default 127.0.0.1)', process.env.ACX_PLATFORM_HOST ?? '127.0.0.1')
    .addOption(platformHomeOption())
    .option('--public-url <url>', 'the URL peers reach it at, when not http://<host>:<port> (env ACX_PLATFORM_PUBLIC_URL)', process.env.ACX_PLATFORM_PUBLIC_URL)
    .option('--deliver-to <url>', 'POST every event delivery here; repeatable (env ACX_PLATFORM_DELIVER_TO, comma-separated)', collect, [])
    .option('--agents <list>', 'also run a router that wakes these agents, handle=DIR pairs, comma-separated: each gets an AI user here (created if missing) and answers as it')
    .option('--webhook-secret <secret>', 'the secret deliveries are signed with; ACX_PLATFORM_WEBHOOK_SECRET_<HANDLE> gives one agent its own, and the variable is safer than the flag, which ps shows (env ACX_PLATFORM_WEBHOOK_SECRET)')
    .addOption(passEnvOption())
    .addOption(replayWindowOption())
    .addOption(noWarmOption())
    .action(async (options: RouterFlags & { port: string; host: string; home?: string; publicUrl?: string; deliverTo: string[]; webhookSecret?: string; agents?: string }) => {
      const port = Number(options.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliExit('usage', `acx platform serve: --port must be an integer from 0 to 65535, not "${options.port}".`);
      const deliverTo = options.deliverTo.length > 0 ? options.deliverTo : splitList(process.env.ACX_PLATFORM_DELIVER_TO);
      const logger = commandLogger('service');
      const routerFlags = resolveRouterFlags('acx platform serve', options, process.env);
      const webhookSecret = options.webhookSecret ?? (process.env.ACX_PLATFORM_WEBHOOK_SECRET || undefined);
      const ownSecrets = agentSecrets(process.env);
      let platformUrl = '';
      // The platform's other AI users' deliveries reach the router too, signed with the shared key
      // or their own: holding those keys, it answers them 200 (not hosted here), not 401.
      const sharedSecrets = [...(webhookSecret ? [webhookSecret] : []), ...Object.values(ownSecrets)];
      const router = options.agents ? await startAgentRouter(home(options), options.agents, { ...routerFlags, sharedSecrets, platformUrl: () => platformUrl, logger }) : undefined;
      const running = await startPlatform({
        home: home(options),
        port,
        host: options.host,
        publicUrl: options.publicUrl || undefined,
        deliverTo: router ? [...deliverTo, router.running.url] : deliverTo,
        webhookSecret,
        webhookSecrets: { ...ownSecrets, ...router?.secrets },
        logger,
      });
      platformUrl = running.url;
      await untilStopped(
        () => process.stdout.write(`${running.url}\n`),
        () => running.close().then(() => router?.running.close()),
      );
    });

  const user = platform.command('user').description("the platform's users and their tokens");
  user
    .command('add')
    .description("create a user and print its token (shown once; only its hash is kept)")
    .addOption(handleOption())
    .requiredOption('--kind <kind>', 'ai or human')
    .option('--name <name>', 'display name (default the handle)')
    .option('--email <address>', 'for password sign-in (POST /session); the password is read from stdin with --password-stdin')
    .option('--password-stdin', 'read the password (first line) from stdin')
    .option('--admin', 'give it the admin role')
    .option('--trust <handle>', 'share mutual trust with this existing user; repeatable', collect, [])
    .addOption(platformHomeOption())
    .addOption(jsonOption('{uuid, handle, name, kind, token}'))
    .action(async (options: { handle: string; kind: string; name?: string; email?: string; passwordStdin?: boolean; admin?: boolean; trust: string[]; home?: string; json?: boolean }) => {
      if (options.kind !== 'ai' && options.kind !== 'human') throw new CliExit('usage', `acx platform user add: --kind must be ai or human, not "${options.kind}".`);
      if (Boolean(options.email) !== Boolean(options.passwordStdin)) throw new CliExit('usage', 'acx platform user add: --email and --password-stdin go together (the password is never a flag: flags show in ps).');
      const passwordHash = options.passwordStdin ? await hashPassword((await readStdin()).split(/\r?\n/)[0] ?? '') : undefined;
      const added = addUser(home(options), {
        handle: options.handle,
        kind: options.kind,
        ...(options.name ? { name: options.name } : {}),
        ...(options.email ? { email: options.email, passwordHash } : {}),
        admin: Boolean(options.admin),
        trust: options.trust,
      });
      process.stdout.write(options.json ? `${JSON.stringify(added)}\n` : `${added.token}\n`);
    });
  user
    .command('token')
    .description('mint another token for an existing user and print it')
    .addOption(handleOption())
    .addOption(platformHomeOption())
    .action((options: { handle: string; home?: string }) => {
      process.stdout.write(`${mintToken(home(options), options.handle).token}\n`);
    });
  user
    .command('suspend')
    .description("suspend an account (its tokens and password stop working; nothing is deleted), or reinstate it with --undo")
    .addOption(handleOption())
    .option('--undo', 'reinstate the account')
    .addOption(platformHomeOption())
    .action((options: { handle: string; undo?: boolean; home?: string }) => {
      suspendUser(home(options), options.handle, !options.undo);
      process.stdout.write(`@${options.handle.replace(/^@/, '')} ${options.undo ? 'reinstated' : 'suspended'}\n`);
    });
  user
    .command('list')
    .description('the users on the platform: handle, kind, uuid')
    .addOption(platformHomeOption())
    .addOption(jsonOption('an array of {uuid, handle, name, kind, admin, created_at}'))
    .action((options: { home?: string; json?: boolean }) => {
      const users = listPlatformUsers(home(options));
      if (options.json) process.stdout.write(`${JSON.stringify(users)}\n`);
      else if (users.length === 0) process.stdout.write('No users yet: add one with `acx platform user add --handle NAME --kind ai|human`.\n');
      else process.stdout.write(users.map((u) => `@${u.handle}\t${u.kind}${u.admin ? ' (admin)' : ''}\t${u.uuid}\t${u.name}`).join('\n') + '\n');
    });
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

function splitList(value: string | undefined): string[] {
  return (value ?? '').split(/[\s,]+/).filter(Boolean);
}

/** ACX_PLATFORM_WEBHOOK_SECRET_<HANDLE>: one agent's own signing key (the router keys by recipient too). */
function agentSecrets(env: NodeJS.ProcessEnv): Record<string, string> {
  const secrets: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const match = /^ACX_PLATFORM_WEBHOOK_SECRET_(.+)$/.exec(name);
    if (match && value) secrets[match[1]!.toLowerCase()] = value;
  }
  return secrets;
}

/**
 * `serve --agents`: an AI user per agent (created on first use, a fresh token each start), its own
 * random signing secret, and a router in this process that wakes it for its deliveries.
 */
async function startAgentRouter(homeDir: string, list: string, settings: Pick<RouterOptions, 'passEnv' | 'replayWindow' | 'warm' | 'sharedSecrets' | 'logger'> & { platformUrl: () => string }) {
  const { logger } = settings;
  let agents: Array<{ name: string; dir: string }>;
  try {
    agents = parseAgentList(list);
  } catch (error) {
    throw new CliExit('usage', `acx platform serve: ${(error as Error).message}`);
  }
  const known = new Set(listPlatformUsers(homeDir).map((user) => user.handle.toLowerCase()));
  const secrets: Record<string, string> = {};
  const routed = agents.map(({ name, dir }) => {
    const user = known.has(name.toLowerCase()) ? mintToken(homeDir, name, 'acx platform serve --agents') : addUser(homeDir, { handle: name, kind: 'ai' });
    if (user.kind !== 'ai') throw new CliExit('usage', `acx platform serve: @${name} is a ${user.kind} user here; an agent answers as an ai user.`);
    const secret = randomBytes(32).toString('hex');
    secrets[user.handle.toLowerCase()] = secret;
    return { name: user.handle, dir, token: user.token, uuid: user.uuid, secret };
  });
  const running = await startRouter({ ...settings, agents: routed, databasePath: join(homeDir, 'router.db') });
  for (const agent of routed) logger.info('platform agent', { handle: agent.name, dir: agent.dir, router: running.url });
  return { running, secrets };
}
