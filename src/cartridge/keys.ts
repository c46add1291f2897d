import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AcxError, errorMessage } from '../core/errors.ts';
import { sha256Hex } from '../util/jcs.ts';

export interface SigningKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  keyid: string;
  publicKeyPem: string;
}

export const PRIVATE_KEY_FILE = 'acx-signing.key.pem';
export const PUBLIC_KEY_FILE = 'acx-signing.pub.pem';

/** keyid = "ed25519:" + lowercase hex(sha256(DER SubjectPublicKeyInfo)) (SPEC §4.2). */
export function keyIdOf(publicKey: KeyObject): string {
  return `ed25519:${sha256Hex(publicKey.export({ type: 'spki', format: 'der' }))}`;
}

export function publicKeyFromPem(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new AcxError('key-invalid', `not a PEM public key: ${errorMessage(error)}`);
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new AcxError('key-invalid', `public key is ${key.asymmetricKeyType}, acx signs with Ed25519`);
  }
  return key;
}

export function generateSigningKey(): SigningKey & { privateKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateKey,
    publicKey,
    keyid: keyIdOf(publicKey),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** Loads a PKCS#8 Ed25519 private key file. */
export function loadSigningKey(path: string): SigningKey {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (error) {
    throw new AcxError('key-missing', `cannot read signing key ${path}: ${errorMessage(error)}`, {
      hint: 'create one with `acx keygen -o <dir>` and pass the .key.pem file with --key',
    });
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (error) {
    throw new AcxError('key-invalid', `${path} is not a PEM private key: ${errorMessage(error)}`, {
      hint: 'pass the private key written by `acx keygen` (…key.pem), not the public key',
    });
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new AcxError('key-invalid', `${path} holds a ${privateKey.asymmetricKeyType} key; acx signs with Ed25519`, {
      hint: 'create an Ed25519 key with `acx keygen`',
    });
  }
  const publicKey = createPublicKey(privateKey);
  return {
    privateKey,
    publicKey,
    keyid: keyIdOf(publicKey),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** Keyids of the public keys in PEM files (an installation's own keys, for the `local` verdict). */
export function keyIdsFromPemFiles(paths: readonly string[]): string[] {
  return paths.map((p) => {
    const pem = readFileSync(p, 'utf8');
    try {
      return keyIdOf(createPublicKey(pem));
    } catch (error) {
      throw new AcxError('key-invalid', `${p} is not a PEM key: ${errorMessage(error)}`);
    }
  });
}

/**
 * Writes a key pair (a new one unless given) into `dir`: the private key with mode 0600 (never
 * overwriting an existing key), the public key world-readable. Refuses a directory that looks like
 * it would be packed.
 */
export function writeKeyPair(dir: string, key = generateSigningKey()): { privateKeyPath: string; publicKeyPath: string; keyid: string } {
  const target = resolve(dir);
  if (/\.acx$/i.test(target)) {
    throw new AcxError('key-location', `refusing to write a private key to ${target}: that is a cartridge path`, {
      hint: 'private keys never go inside a cartridge; pass a directory outside it, e.g. -o ~/.config/acx/keys',
    });
  }
  if (existsSync(join(target, 'agent.json')) || existsSync(join(target, 'manifest.json'))) {
    throw new AcxError('key-location', `refusing to write a private key into the agent directory ${target}`, {
      hint: 'an agent directory is packed into a cartridge; keep the signing key outside it',
    });
  }
  mkdirSync(target, { recursive: true, mode: 0o700 });
  const privateKeyPath = join(target, PRIVATE_KEY_FILE);
  const publicKeyPath = join(target, PUBLIC_KEY_FILE);
  if (existsSync(privateKeyPath)) {
    throw new AcxError('key-exists', `${privateKeyPath} already exists; refusing to overwrite a signing key`, {
      hint: 'use the existing key, or choose another directory with -o',
    });
  }
  // O_EXCL + 0600 from the first byte: the private key is never readable by others, not even briefly.
  const fd = openSync(privateKeyPath, 'wx', 0o600);
  try {
    writeSync(fd, key.privateKeyPem);
  } finally {
    closeSync(fd);
  }
  chmodSync(privateKeyPath, 0o600);
  const pubFd = openSync(publicKeyPath, 'w', 0o644);
  try {
    writeSync(pubFd, key.publicKeyPem);
  } finally {
    closeSync(pubFd);
  }
  return { privateKeyPath, publicKeyPath, keyid: key.keyid };
}
