/**
 * The AI SDK's calls that resolve their models through its provider registry, and so bring its
 * gateway provider and that one's OIDC client with them (with the code they share, ~40% of what
 * the SDK adds to a start): media, embeddings, file uploads, and the eval judge's generateText.
 * acx's own model call needs none of it (src/engine/model-call.ts calls the model itself).
 *
 * Everything else that runs on a turn's way imports from 'ai' directly; these only from here, and
 * on first use (`await import('./ai-calls.ts')`), except the eval judge, which only `acx eval`
 * reaches. The CLI bundle (scripts/build.ts) gives this module its own copy of 'ai', because a
 * bundler keeps one module's code in one chunk: with one copy, every start would load what any
 * command calls.
 */
export { createDownload, embedMany, experimental_generateVideo, generateImage, generateText, Output, transcribe, uploadFile } from 'ai';
