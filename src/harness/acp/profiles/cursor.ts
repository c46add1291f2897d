import type { ACPSettings } from '../settings.ts';

/**
 * Cursor's CLI (`agent acp`), installed by Cursor's Bash installer into $HOME/.local/bin. The
 * update flag keeps the cached installation from changing itself. Brokering covers only the
 * initial API-key exchange with api2.cursor.sh; the local proxy cannot route that HTTPS host, so
 * on the local sandbox CURSOR_API_KEY is forwarded as is (a warning is logged).
 */
export const cursorProfile = {
  harnessId: 'cursor-acp',
  source: { type: 'install-command', command: 'curl https://cursor.com/install -fsS | bash' },
  executable: 'agent',
  args: ['--disable-auto-update', 'acp'],
  modelMapping: { type: 'session-config-option', path: 'model' },
  clientCapabilities: { _meta: { parameterizedModelPicker: true } },
  credentialEnv: ['CURSOR_API_KEY'],
  credentialBrokering: ({ env, sandboxEnv }) => {
    if (!env.CURSOR_API_KEY || !sandboxEnv.CURSOR_API_KEY) return [];
    return [
      {
        match: {
          host: 'api2.cursor.sh',
          path: { exact: '/auth/exchange_user_api_key' },
          method: ['POST'],
          headers: [{ key: { exact: 'Authorization' }, value: { exact: `Bearer ${sandboxEnv.CURSOR_API_KEY}` } }],
        },
        transform: { headers: { Authorization: `Bearer ${env.CURSOR_API_KEY}` } },
      },
    ];
  },
} satisfies ACPSettings;
