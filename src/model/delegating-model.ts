import type { LanguageModelV4 } from '@ai-sdk/provider';

/**
 * A model that is `model` in every respect (provider, id, supported URLs) except the calls given:
 * how acx adjusts what a provider's model sends or reports without forking the provider.
 */
export function delegatingModel(model: LanguageModelV4, calls: Partial<Pick<LanguageModelV4, 'doGenerate' | 'doStream'>>): LanguageModelV4 {
  return {
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    get supportedUrls() {
      return model.supportedUrls;
    },
    doGenerate: calls.doGenerate ?? ((options) => model.doGenerate(options)),
    doStream: calls.doStream ?? ((options) => model.doStream(options)),
  };
}
