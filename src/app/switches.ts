/**
 * An on/off environment variable that is on by default (ACX_PACE_ENABLED, ACX_MODEL_VISION,
 * ACX_EVENT_ADDRESSED): `0`, `false`, `no` or `off` turn it off; anything else, or unset, leaves
 * it on.
 */
export function isSwitchedOff(value: string | undefined): boolean {
  return /^(0|false|no|off)$/i.test(value?.trim() ?? '');
}
