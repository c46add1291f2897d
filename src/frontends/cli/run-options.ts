import { type Command, InvalidArgumentError, Option } from 'commander';
import { parseModelSpec } from '../../model/providers.ts';
import { AcxError, errorMessage } from '../../core/errors.ts';
import { HARNESS_NAMES } from '../../harness/acp/profiles/names.ts';
import type { RunFlags } from '../../app/settings.ts';

/** The flags every command that runs an agent shares; each has an environment variable too. */
export function addRunOptions(command: Command): Command {
  const collect = (value: string, previous: string[] = []) => [...previous, value];
  return command
    .option('-m, --model <provider:id>', 'model to use, e.g. openai:gpt-5.4-mini (env ACX_MODEL)', modelSpecFlag)
    .option('--surface <surface>', 'API surface: responses or chat for openai (env ACX_MODEL_SURFACE)')
    .option('--base-url <url>', 'model endpoint override (env <PROVIDER>_BASE_URL or ACX_BASE_URL)')
    .option('--no-vision', 'the model reads text only: images from tools are described to it as text (env ACX_MODEL_VISION=0)')
    .option('--param <key=value>', 'model call setting, repeatable (e.g. temperature=0.2)', collect)
    .option('--model-params <file>', 'model_params.json to use (default: <config home>/model_params.json)')
    .option('--max-steps <n>', 'step budget per turn, default 24 (env ACX_MAX_STEPS)', wholeNumberFlag(1))
    .option('--context-tokens <n>', 'context ceiling in tokens; 0 disables compaction (env ACX_MAX_CONTEXT_TOKENS)', wholeNumberFlag(0))
    .option('--home <dir>', 'state directory for journals and memory (env ACX_HOME)')
    .option('--store <url>', 'keep the journal (and acx wake\'s inbox and leases) on PostgreSQL: a postgres:// URL (env ACX_STORE; default the SQLite files under the home)')
    .option('--config-home <dir>', 'config home (env ACX_CONFIG_HOME, default ~/.config/acx)')
    .option('--session <id>', 'session id to open or resume (env ACX_SESSION; default: a new session)')
    .option('--record <file>', 'record every model request and response to a cassette')
    .option('--replay <file>', 'replay model responses from a cassette (offline, no key needed)')
    .addOption(
      new Option('--permission-mode <mode>', 'which tool kinds run without asking (env ACX_PERMISSION_MODE)').choices([
        'allow-reads',
        'allow-edits',
        'allow-all',
      ]),
    )
    .option('--workspace <dir>', 'directory the fs and execute tools work in (env ACX_WORKSPACE; default <home>/agents/<id>/workspace)')
    .option('--mcp <spec>', 'MCP server: name=command args, name=https://url, or a .json file (repeatable)', collect)
    .option('--allow-portable', 'cartridges: run one whose signer is not in the trust registry (env ACX_ALLOW_PORTABLE=1)')
    .option('--registry <file>', 'cartridges: acx.trust-registry/1 file the signature is judged against (env ACX_TRUST_REGISTRY)')
    .option('--allow-foreign-save', 'cartridges: also show SAVE memory this installation did not write, marked unverified (env ACX_ALLOW_FOREIGN_SAVE=1)')
    .option('--allow-cartridge-env <name>', 'cartridges: let its MCP drop-ins read this host variable as ${NAME}, repeatable (env ACX_CARTRIDGE_ENV=A,B)', collect)
    .addOption(
      new Option('--harness <name>', 'what runs the turns: acx\'s engine or an ACP coding agent (env ACX_HARNESS; default engine)').choices([...HARNESS_NAMES]),
    );
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
