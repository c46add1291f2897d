/**
 * `acx/cartridge` — the `.acx` container: open (`Cartridge`), build (`buildCartridge`), verify
 * (`verifyCartridge`, against a trust registry), strip (`stripCartridge`), inspect
 * (`inspectCartridge`), signing keys (`generateSigningKey`, `writeKeyPair`, `loadSigningKey`),
 * the trust registry (`loadTrustRegistry`, `parseTrustRegistry`), the SPEC check (`checkSpec`) and
 * the SAVE zone's memory partition.
 */
import '../node-guard.ts';
export * from '../cartridge/index.ts';
