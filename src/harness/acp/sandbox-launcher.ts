// Runs first inside an ACP agent's bubblewrap sandbox, whose network namespace has nothing but
// its own loopback. For each `--forward PORT=SOCKET` it listens on 127.0.0.1:PORT there and
// relays every connection to SOCKET, a unix socket acx bound on the host and bind-mounted in:
// the agent reaches acx's broker and host-tool bridge at the same URLs as outside, and nothing
// else. Once every port listens it starts the agent (`-- command args…`) on this process's
// stdio, passes termination signals on, and exits as the agent did.
// Node built-ins only: it must start fast and resolve nothing from the sandbox.
import { spawn } from 'node:child_process';
import net from 'node:net';

const argv = process.argv.slice(2);
const split = argv.indexOf('--');
if (split < 0 || split === argv.length - 1) {
  process.stderr.write('acx sandbox launcher: usage: --forward PORT=SOCKET ... -- command [args...]\n');
  process.exit(2);
}
const forwards: Array<{ port: number; socket: string }> = [];
for (let i = 0; i < split; i += 2) {
  const match = argv[i] === '--forward' ? /^(\d{1,5})=(\/.+)$/.exec(argv[i + 1] ?? '') : null;
  if (!match) {
    process.stderr.write(`acx sandbox launcher: bad argument ${JSON.stringify(argv[i])}\n`);
    process.exit(2);
  }
  forwards.push({ port: Number(match[1]), socket: match[2]! });
}

function relay(port: number, socket: string): Promise<void> {
  const server = net.createServer((inside) => {
    const outside = net.connect(socket);
    inside.on('error', () => outside.destroy());
    outside.on('error', () => inside.destroy());
    inside.pipe(outside);
    outside.pipe(inside);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
}

try {
  await Promise.all(forwards.map((f) => relay(f.port, f.socket)));
} catch (error) {
  process.stderr.write(`acx sandbox launcher: cannot listen inside the sandbox: ${(error as Error).message}\n`);
  process.exit(70);
}

const [command, ...args] = argv.slice(split + 1);
const child = spawn(command!, args, { stdio: 'inherit' });
const signals = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
for (const signal of signals) process.on(signal, () => child.kill(signal));
child.on('error', (error) => {
  process.stderr.write(`acx sandbox launcher: cannot start ${command}: ${error.message}\n`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  if (signal) {
    for (const s of signals) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  }
  process.exit(code ?? 1);
});
