/**
 * `acx/contract` — the host contract of SPEC §8, as pure functions: parse a cartridge's harness
 * requirements (`parseHarnessRequirements`, `defaultHarnessRequirements`), check structural
 * acceptance of host tools, `negotiate` a compliance descriptor, and the refusal
 * (`assertAccepted` throws `UnsupportedHarnessError` with the unmet checks).
 */
export * from '../contract/index.ts';
