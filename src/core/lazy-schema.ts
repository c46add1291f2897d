/**
 * Schemas acx writes in code, built on first use instead of when their module loads: a run pays
 * for building (zod's constructors) and converting (zod's JSON Schema) only the schemas it uses,
 * and a replayed turn or an answered wake uses few or none.
 *
 *   const fooInput = lazySchema(() => z.object({ ... }));   // nothing built yet
 *   inputSchema: fooInput()                                  // built once, then the same object
 */
export function lazySchema<T extends object>(build: () => T): () => T {
  let schema: T | undefined;
  const get = () => (schema ??= ownSchema(build()));
  lazySchemas.push(get);
  return get;
}

// Every lazy schema of the modules loaded so far, for a process that builds them ahead of use.
const lazySchemas: Array<() => object> = [];

/**
 * Builds every lazy schema of the modules loaded so far (each is then the object its tools
 * return) and returns them: what a warm wake process does before its event
 * (src/frontends/cli/warm-rehearsal.ts), so that the event pays for none of them.
 */
export function buildLazySchemas(): object[] {
  return lazySchemas.map((get) => get());
}

// acx's own schemas: their tests convert each one, so the registry need not convert them at
// registration to find a schema with no JSON Schema form (a user's tool is converted there).
const ownSchemas = new WeakSet<object>();

/** Marks a schema acx itself wrote (see isOwnSchema); returns it. */
export function ownSchema<T extends object>(schema: T): T {
  ownSchemas.add(schema);
  return schema;
}

/** Whether `schema` is one of acx's own (lazySchema's or ownSchema's), whose JSON Schema waits for its first reader. */
export function isOwnSchema(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && ownSchemas.has(schema);
}
