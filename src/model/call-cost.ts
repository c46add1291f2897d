/**
 * What one model call cost, in USD, when the provider says so in its response: OpenRouter's
 * `usage.cost` (providerMetadata.openrouter.usage.cost), xAI's `usage.cost_in_usd_ticks`
 * (providerMetadata.xai.costInUsdTicks) and the AI Gateway's `cost` (a decimal
 * string in providerMetadata.gateway). Undefined when the provider states none: acx never
 * estimates a price.
 */
export function callCostUsd(providerMetadata: Record<string, unknown> | undefined): number | undefined {
  // xAI states its charge in ticks of 1e-10 USD, on chat calls and on image and video generations.
  const ticks = (providerMetadata?.xai as { costInUsdTicks?: unknown } | undefined)?.costInUsdTicks;
  if (typeof ticks === 'number' && Number.isFinite(ticks)) return ticks / 1e10;
  const openrouter = (providerMetadata?.openrouter as { usage?: { cost?: unknown } } | undefined)?.usage?.cost;
  if (typeof openrouter === 'number' && Number.isFinite(openrouter)) return openrouter;
  const gateway = (providerMetadata?.gateway as { cost?: unknown } | undefined)?.cost;
  const parsed = typeof gateway === 'string' ? Number(gateway) : gateway;
  return typeof parsed === 'number' && Number.isFinite(parsed) ? parsed : undefined;
}
