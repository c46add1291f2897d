export { Cartridge, type Compression, type ObjectRow } from './container.ts';
export { APPLICATION_ID, FLAG_SAVE_PRESENT, SPEC_VERSION, portablePathProblem, assertPortablePath } from './format.ts';
export { computeRomManifest, liveOid, type RomManifest } from './manifest.ts';
export { generateSigningKey, loadSigningKey, writeKeyPair, keyIdOf, keyIdsFromPemFiles, type SigningKey } from './keys.ts';
export { pae, signStatement, parseEnvelope, verifyEnvelopeSignature, decodeBase64, PAYLOAD_TYPE, PREDICATE_TYPE, type DsseEnvelope, type Statement } from './dsse.ts';
export { loadTrustRegistry, parseTrustRegistry, emptyRegistry, TRUST_REGISTRY_SCHEMA, type TrustRegistry, type TrustedKey, type LoadedRegistry } from './trust.ts';
export { verifyCartridge, verifyOpen, assertNotTampered, type Verdict, type VerifyResult, type VerifyOptions } from './verify.ts';
export { buildCartridge, type BuildOptions, type BuildResult } from './build.ts';
export { readAgentDir, detectLayout, type AgentPlan } from './layout.ts';
export { scanForSecrets, scrubGate, ScrubBlockedError, type ScrubFinding } from './scrub-gate.ts';
export { stripCartridge, type StripResult } from './strip.ts';
export { inspectCartridge, formatInspect, type InspectReport } from './inspect.ts';
export { checkSpec, checkCartridgeSpec, type SpecReport } from './spec.ts';
export {
  artifactFingerprint, codebaseFingerprint, canonicalRepoIdentity, repoIdentityOf, loadOrCreateSalt,
  validateMemoryRecord, normalizeMemoryRecord, mergeMemoryRecords, type MemoryRecord,
} from './memory.ts';
export { withSaveZone, readComplianceDescriptor, COMPLIANCE_PATH, type SaveWriter } from './save.ts';
