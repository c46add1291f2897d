import { type Command, InvalidArgumentError, Option } from 'commander';
import { parseModelSpec } from '../../model/providers.ts';
import { AcxError, errorMessage } from '../../core/errors.ts';
import { HARNESS_NAMES } from '../../harness/acp/profiles/names.ts';
import type { RunFlags } from '../../app/settings.ts';
import { DEFAULT_MAX_STEPS } from '../../engine/caps.ts';
import { PERMISSION_MODES } from '../../tools/permission.ts';
import { allowPortableOption, configHomeOption, homeOption, orList, registryOption, storeOption } from './common-options.ts';

/** `--model provider:id`, checked as it is parsed. */
export const modelOption = (): Option =>
  new Option('-m, --model <provider:id>', 'model to run on, e.g. openai:gpt-5.4-mini (env ACX_MODEL; default the agent\'s "model")').argParser(modelSpecFlag);

/** A run option some commands leave out, because there it would mean nothing (see addRunOptions). */
export type RunOptionLeftOut = '--session' | '--mcp' | '--harness' | '--home' | '--store' | '--workspace' | '--record' | '--replay';

/**
 * The flags of the commands that run an agent (`run`, `chat`, `acp`, `wake`, `worker`, `mcp`,
 * and `resolved-config`, which reports what they would use); each has an environment variable
 * too. A command leaves out what means nothing there: `acp` and `mcp` take their sessions from
 * the client, `worker` from each job, and what `resolved-config` reports is the same for every
 * session (no --session); `mcp` serves tools and connects no MCP server (no --mcp); `mcp`,
 * `wake` and `worker` run only on acx's engine (no --harness); `eval` runs each case on fresh
 * state of its own, replayed from the cassette the case names (no --session, --home, --store,
 * --workspace, --record or --replay).
 */
export function addRunOptions(command: Command, leaveOut: readonly RunOptionLeftOut[] = []): Command {
  const collect = (value: string, previous: string[] = []) => [...previous, value];
  const options = [
    modelOption(),
    new Option('--surface <surface>', 'API surface: responses or chat for openai (env ACX_MODEL_SURFACE; default responses)'),
    new Option('--base-url <url>', 'model endpoint override (env <PROVIDER>_BASE_URL or ACX_BASE_URL)'),
    new Option('--no-vision', 'the model reads text only: images from tools are described to it as text (env ACX_MODEL_VISION=0)'),
    new Option('--param <key=value>', 'model call setting, e.g. temperature=0.2; repeatable').argParser(collect),
    new Option('--model-params <file>', 'model_params.json to use (default <config home>/model_params.json)'),
    new Option('--max-steps <n>', `step budget per turn (env ACX_MAX_STEPS; default ${DEFAULT_MAX_STEPS})`).argParser(wholeNumberFlag(1)),
    new Option('--context-tokens <n>', 'context ceiling in tokens; 0 disables compaction (env ACX_MAX_CONTEXT_TOKENS; default the model\'s context window)').argParser(wholeNumberFlag(0)),
    homeOption(),
    storeOption(),
    configHomeOption(),
    new Option('--session <id>', 'session id to open or resume (env ACX_SESSION; default a new session)'),
    new Option('--record <file>', 'record every model request and response to a cassette'),
    new Option('--replay <file>', 'replay model responses from a cassette (offline, no key needed)'),
    new Option('--permission-mode <mode>', `which tool kinds run without asking: ${orList(PERMISSION_MODES)} (env ACX_PERMISSION_MODE; default the agent's, else allow-edits)`).choices([...PERMISSION_MODES]),
    new Option('--workspace <dir>', 'directory the fs and execute tools work in (env ACX_WORKSPACE; default <home>/agents/<id>/workspace)'),
    new Option('--mcp <spec>', 'MCP server: name=command args, name=https://url, or a .json file; repeatable').argParser(collect),
    allowPortableOption(),
    registryOption(),
    new Option('--allow-foreign-save', 'cartridges: also show SAVE memory this installation did not write, marked unverified (env ACX_ALLOW_FOREIGN_SAVE=1)'),
    new Option('--allow-cartridge-env <name>', 'cartridges: let its MCP drop-ins read this host variable as ${NAME}; repeatable (env ACX_CARTRIDGE_ENV=A,B)').argParser(collect),
    new Option('--harness <name>', `what runs the turns: ${orList(HARNESS_NAMES)}; engine is acx's own, the others are ACP coding agents (env ACX_HARNESS; default engine)`).choices([...HARNESS_NAMES]),
  ];
  for (const option of options) if (!leaveOut.includes(option.long as RunOptionLeftOut)) command.addOption(option);
  return command;
}

export function runFlags(agent: string | undefined, options: Record<string, unknown>): RunFlags {
  return { ...(agent ? { agent } : {}), ...(options as RunFlags) };
}

/**
 * Flag values checked as they are parsed, so a bad one is a usage error (exit 2) naming the flag;
 * the same value from an environment variable or a file is a configuration error, found later.
 */
function wholeNumberFlag(min: 0 | 1): (value: string) => string {
  return (value) => {
    if (!/^\d+$/.test(value.trim()) || Number(value) < min) throw new InvalidArgumentError(`must be a ${min === 0 ? 'non-negative' : 'positive'} whole number.`);
    return value.trim();
  };
}

/** A spec that cannot parse is a usage error that keeps the parser's hint (the form, the providers). */
function modelSpecFlag(value: string): string {
  try {
    parseModelSpec(value);
  } catch (error) {
    throw new AcxError('usage', `--model: ${errorMessage(error)}`, AcxError.isInstance(error) && error.hint ? { hint: error.hint } : {});
  }
  return value;
}
