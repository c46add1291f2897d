import { join, resolve } from 'node:path';
import { Cartridge } from '../cartridge/container.ts';
import { cartridgeDefinition } from '../cartridge/definition.ts';
import { verifyOpen, type Verdict, type VerifyResult } from '../cartridge/verify.ts';
import { emptyRegistry, loadTrustRegistry } from '../cartridge/trust.ts';
import { CartridgeBootRefusal } from '../contract/boot-refusal.ts';
import type { AgentDefinition } from '../agent-def/definition.ts';
import { seedSearchText } from '../agent-def/memory.ts';
import type { LoopContextIntent } from '../agent-def/policy.ts';
import { parseMcpConfigDocument, type McpServerConfig } from '../mcp/config.ts';
import { sha256Hex } from '../util/jcs.ts';
import { silentLogger, type Logger } from '../util/logger.ts';

/**
 * The first half of booting a cartridge: the trust gate and reading its ROM, which every command
 * naming a cartridge does (src/app/settings.ts imports this module only then). The handshake that needs the
 * contract's negotiation and the tools' schemas is boot-cartridge.ts, loaded only by what runs
 * the agent: a command that reads a directory agent, or answers from its store, loads none of it.
 */

// Recognising a cartridge and where its state lives: light helpers every command uses (paths.ts).
export { cartridgeStateDir, isCartridgePath } from './paths.ts';

// ---------------------------------------------------------------------------------------------
// The trust gate

export interface TrustGateOptions {
  /** Run `portable` (and unsigned `legacy`) cartridges: --allow-portable / ACX_ALLOW_PORTABLE=1. */
  allowPortable?: boolean;
  /** An acx.trust-registry/1 file: --registry / ACX_TRUST_REGISTRY. */
  registry?: string;
  /** Keyids of this installation's own keys (the `local` verdict). */
  ownKeys?: readonly string[];
  logger?: Logger;
  /** Used in messages: "run", "handshake". */
  purpose?: string;
}

const RUNNABLE: ReadonlySet<Verdict> = new Set(['trusted', 'local']);

/**
 * `tampered` never runs. `portable` (valid signature, key not trusted) and `legacy` (no usable
 * signature) run only when the operator allows it explicitly. The verdict is logged either way.
 */
export function gateTrust(result: VerifyResult, path: string, options: TrustGateOptions): void {
  const logger = options.logger ?? silentLogger;
  const fields = {
    file: path,
    verdict: result.verdict,
    ...(result.publisherId ? { publisher: result.publisherId } : {}),
    ...(result.keyid ? { keyid: result.keyid } : {}),
    why: result.reasons.join('; '),
  };
  if (result.verdict === 'tampered') {
    logger.error('cartridge verdict', fields);
    throw new CartridgeBootRefusal('tampered', `${path} is tampered and will not ${options.purpose ?? 'run'}:\n${result.reasons.map((r) => `  ${r}`).join('\n')}`, {
      hint: 'Do not use this file; get a fresh copy from its publisher.',
    });
  }
  if (RUNNABLE.has(result.verdict)) {
    logger.info('cartridge verdict', fields);
    return;
  }
  if (!options.allowPortable) {
    logger.warn('cartridge verdict', fields);
    throw new CartridgeBootRefusal('untrusted', `${path} is ${result.verdict}, not trusted: ${result.reasons.join('; ')}. Nothing was run.`, {
      hint:
        'Add the publisher\'s public key to a trust registry and pass --registry FILE (or ACX_TRUST_REGISTRY), ' +
        'or run it anyway with --allow-portable (or ACX_ALLOW_PORTABLE=1).',
    });
  }
  logger.warn('cartridge verdict', { ...fields, allowed_by: 'allow-portable' });
}

// ---------------------------------------------------------------------------------------------
// What the ROM says

/** A ROM memory record as the booted agent sees it: searchable, never written. */
export interface RomMemoryRecord {
  id: string;
  text: string;
  tags: string[];
}

export interface CartridgeRom {
  path: string;
  cartridgeId: string;
  /** The recomputed ROM manifest hash ("sha256:…"). */
  romHash: string;
  /** The agent as the ROM defines it (the same reading a directory gets). */
  definition: AgentDefinition;
  /** The exact bytes of rom/manifest/harness-requirements.json. */
  manifestBytes: Uint8Array;
  policy: LoopContextIntent;
  memory: RomMemoryRecord[];
  /** MCP drop-ins declared in ROM (rom/mcp/*.json). */
  mcp: McpServerConfig[];
}

export interface LoadedCartridge {
  rom: CartridgeRom;
  verify: VerifyResult;
  /** A stable directory name for this cartridge's local state (journal, memory index, workspace). */
  stateKey: string;
}

/**
 * Opens the cartridge read-only, verifies it, applies the trust gate, and only then reads the
 * ROM. A tampered or (unless allowed) untrusted cartridge is refused before any ROM content is
 * parsed.
 */
export function loadCartridge(path: string, options: TrustGateOptions = {}): LoadedCartridge {
  const file = resolve(path);
  const registry = options.registry ? loadTrustRegistry(options.registry) : emptyRegistry();
  const cart = Cartridge.open(file, { readonly: true });
  try {
    const verify = verifyOpen(cart, { registry, ...(options.ownKeys ? { ownKeys: options.ownKeys } : {}) });
    gateTrust(verify, file, options);
    const rom = readRom(cart, file, verify.manifestHash ?? '');
    const idPart = rom.definition.manifest.id.replace(/[^a-z0-9._-]/g, '-').slice(0, 64) || 'cartridge';
    return {
      rom,
      verify,
      stateKey: `${idPart}-${sha256Hex(rom.cartridgeId).slice(0, 12)}`,
    };
  } finally {
    cart.close();
  }
}

/** Reads the ROM through the one agent-definition reader, then what a boot needs beside it. */
export function readRom(cart: Cartridge, path: string, romHash: string): CartridgeRom {
  const definition = cartridgeDefinition(cart, path);
  return {
    path,
    cartridgeId: cart.allMeta()['acx.cartridge_id'] ?? romHash,
    romHash,
    definition,
    manifestBytes: definition.requirements.bytes,
    policy: definition.policy.intent,
    memory: definition.memory
      .map((seed) => ({ id: seed.id, text: seedSearchText(seed), tags: seed.tags }))
      .filter((record) => record.text.trim() !== ''),
    // No host variable reaches a ROM drop-in unless the host grants it (prepare.ts adds the grant).
    mcp: definition.mcp.map((dropIn) => ({ ...parseMcpConfigDocument(dropIn.text, `${path}:${dropIn.file}`, dropIn.name, process.cwd()), envGrant: [] })),
  };
}

