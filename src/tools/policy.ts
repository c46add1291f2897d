import type { Tool } from './tool.ts';

/**
 * Policy decides which tools may load at all. Two profiles:
 * - `locked` (the default): refuses any tool that needs a host capability outside the sandbox
 *   (an unsandboxed host shell, writes outside the workspace).
 * - `unlocked`: forbids nothing; an operator selects it deliberately, in code or with
 *   `ACX_PROFILE=unlocked`. Absent, empty or any other value stays `locked`.
 * Independently of the profile, an opt-in tool loads only when granted by name, and a tool that
 * needs the host shell never loads as root.
 */
export type Profile = 'locked' | 'unlocked';

/** Capabilities beyond the sandbox that a tool can declare it needs (`requires`). */
export const HOST_CAPABILITIES = ['host-shell', 'fs-outside-workspace'] as const;
export type HostCapability = (typeof HOST_CAPABILITIES)[number];

const LOCKED_DENIES: readonly HostCapability[] = ['host-shell', 'fs-outside-workspace'];

const CAPABILITY_WORDING: Record<HostCapability, string> = {
  'host-shell': 'an unsandboxed shell on the host',
  'fs-outside-workspace': 'writing files outside the workspace',
};

/**
 * A tool as the policy sees it: the Tool contract plus two optional declarations that live here
 * (not in tool.ts) because only the policy reads them.
 */
export interface PolicyTool extends Tool {
  /** Host capabilities beyond the sandbox this tool needs. */
  requires?: readonly HostCapability[];
  /** Off unless granted by name (`Policy` option `grants`), whatever the profile. */
  optIn?: boolean;
  /** The grant an operator gives for it, when that is not the tool's own name (one grant, several tools). */
  grant?: string;
}

export interface PolicyDecision {
  allowed: boolean;
  /** Why the tool was refused (empty when allowed). */
  reason: string;
}

export interface PolicyOptions {
  /** Names of opt-in tools the operator granted. */
  grants?: Iterable<string>;
  /** Whether this process runs as root; injectable for tests. Defaults to `euid === 0`. */
  isRoot?: () => boolean;
}

export function parseProfile(value: string | undefined | null): Profile {
  return typeof value === 'string' && value.trim().toLowerCase() === 'unlocked' ? 'unlocked' : 'locked';
}

export function processIsRoot(): boolean {
  return typeof process.geteuid === 'function' && process.geteuid() === 0;
}

export class Policy {
  readonly profile: Profile;
  readonly grants: ReadonlySet<string>;
  private readonly isRoot: () => boolean;

  constructor(profile: Profile, options: PolicyOptions = {}) {
    this.profile = profile;
    this.grants = new Set(options.grants ?? []);
    this.isRoot = options.isRoot ?? processIsRoot;
  }

  static locked(options: PolicyOptions = {}): Policy {
    return new Policy('locked', options);
  }

  static unlocked(options: PolicyOptions = {}): Policy {
    return new Policy('unlocked', options);
  }

  /** The profile named by `ACX_PROFILE` (anything but `unlocked` is `locked`). */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, options: PolicyOptions = {}): Policy {
    return new Policy(parseProfile(env.ACX_PROFILE), options);
  }

  /** Host capabilities this profile refuses. */
  get denied(): readonly HostCapability[] {
    return this.profile === 'locked' ? LOCKED_DENIES : [];
  }

  /** Whether the process runs as root (as the policy sees it). */
  runningAsRoot(): boolean {
    return this.isRoot();
  }

  check(tool: PolicyTool): PolicyDecision {
    const requires = tool.requires ?? [];
    for (const capability of requires) {
      if (!(HOST_CAPABILITIES as readonly string[]).includes(capability)) {
        return refuse(`it declares an unknown host capability "${String(capability)}"`);
      }
    }
    if (tool.optIn && !this.grants.has(tool.name)) {
      return refuse(`it is an opt-in tool and was not granted (grant "${tool.grant ?? tool.name}" explicitly to enable it)`);
    }
    for (const capability of requires) {
      if (this.denied.includes(capability)) {
        return refuse(
          `it needs ${CAPABILITY_WORDING[capability]} (${capability}), which the ${this.profile} profile refuses ` +
            `(select the unlocked profile: ACX_PROFILE=unlocked or Policy.unlocked())`,
        );
      }
    }
    if (requires.includes('host-shell') && this.isRoot()) {
      return refuse('it gives the model an unsandboxed shell and this process runs as root (run acx as an unprivileged user)');
    }
    return { allowed: true, reason: '' };
  }

  describe(): { profile: Profile; denied: HostCapability[]; grants: string[] } {
    return { profile: this.profile, denied: [...this.denied], grants: [...this.grants].sort() };
  }
}

function refuse(reason: string): PolicyDecision {
  return { allowed: false, reason };
}
