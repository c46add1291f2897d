import { describe, expect, it } from 'vitest';
import { approvalRefusal } from '../../src/app/tool-host.ts';

describe('acx mcp refusals of calls that need approval', () => {
  it('names --permission-mode allow-all when the mode is what asks', () => {
    expect(approvalRefusal({ name: 'execute', kind: 'execute' }, 'allow-reads').describe()).toBe(
      'execute is a "execute" tool, which permission mode allow-reads runs only after approval, and acx mcp has nobody to ask.\n' +
        '  → Restart acx mcp with --permission-mode allow-all (or ACX_PERMISSION_MODE=allow-all) to leave that decision to the MCP client.',
    );
  });

  it('does not offer allow-all for a tool that asks on every call whatever the mode', () => {
    const refusal = approvalRefusal({ name: 'wire_money', kind: 'other' }, 'allow-all');
    expect(refusal.code).toBe('mcp-needs-approval');
    expect(refusal.describe()).toBe(
      'wire_money asks the host for approval before every call, and acx mcp has nobody to ask, so it cannot run here.\n' +
        '  → Run the agent with acx run or acx chat, where its approvals can be answered.',
    );
  });
});
