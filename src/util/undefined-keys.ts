/**
 * `value` without the keys of its plain objects that hold `undefined`, all the way down: what
 * JSON.parse(JSON.stringify(value)) would give for those keys, without copying anything that has
 * none (the same object comes back). Arrays, class instances and bytes are walked into or kept as
 * they are, never rebuilt as plain objects.
 */
export function withoutUndefinedKeys<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = withoutUndefinedKeys(value[i]);
      if (item !== value[i]) (copy ??= [...value])[i] = item;
    }
    return (copy ?? value) as T;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const entries = Object.entries(value as Record<string, unknown>);
  let changed = false;
  const kept: Array<[string, unknown]> = [];
  for (const [key, item] of entries) {
    if (item === undefined) {
      changed = true;
      continue;
    }
    const plain = withoutUndefinedKeys(item);
    if (plain !== item) changed = true;
    kept.push([key, plain]);
  }
  if (!changed) return value;
  // Built anew rather than copied and `delete`d from: an object a key was deleted from is slower
  // to read for as long as it lives, and this one is read on every later step of the session.
  const copy: Record<string, unknown> = prototype === null ? Object.create(null) : {};
  for (const [key, item] of kept) copy[key] = item;
  return copy as T;
}
