/** The host contract (SPEC §8): manifest, structural acceptance, handshake, refusal, preflight. */
export * from './requirements.ts';
export * from './subsumption.ts';
export * from './descriptor.ts';
export * from './negotiate.ts';
export * from './guardrail-roles.ts';
export * from './refusal.ts';
export * from './preflight.ts';
export * from './boot-refusal.ts';
