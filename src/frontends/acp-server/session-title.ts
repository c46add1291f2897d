import type * as acp from '@agentclientprotocol/sdk';

/**
 * A session's title, from its first prompt (no model call): the prompt's text on one line, cut
 * at a word boundary to fit a session list.
 */
const MAX_TITLE = 60;

export function titleFromPrompt(blocks: readonly acp.ContentBlock[]): string | undefined {
  const text = blocks
    .map((block) => (block.type === 'text' ? block.text : block.type === 'resource_link' ? block.name : ''))
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (!text) return undefined;
  if (text.length <= MAX_TITLE) return text;
  const cut = text.slice(0, MAX_TITLE - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > MAX_TITLE / 2 ? cut.slice(0, space) : cut).replace(/[\s,.;:!?-]+$/, '')}…`;
}
