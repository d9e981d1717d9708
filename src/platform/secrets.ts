import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Keys derived from the one configured SECRETS_KEY: each purpose gets its own key (HKDF),
 * so a session-signing key can never decrypt a provider secret.
 */
export interface ServerKeys {
  sessionSigningKey: Uint8Array;
  seal(plaintext: string): string;
  open(sealed: string): string;
}

export function deriveServerKeys(secretsKeyBase64: string): ServerKeys {
  const root = Buffer.from(secretsKeyBase64, 'base64');
  if (root.length < 32) throw new Error('SECRETS_KEY must decode to at least 32 bytes.');
  const derive = (info: string) => new Uint8Array(hkdfSync('sha256', root, Buffer.alloc(0), info, 32));
  const sessionSigningKey = derive('callforge/session-jwt');
  const encryptionKey = derive('callforge/secrets-at-rest');
  return {
    sessionSigningKey,
    // AES-256-GCM; the sealed form is "v1.<iv>.<tag>.<ciphertext>" in base64url.
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', encryptionKey, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['v1', iv, cipher.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('Unrecognised sealed secret.');
      const decipher = createDecipheriv('aes-256-gcm', encryptionKey, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}

export const generateSecretsKey = (): string => randomBytes(32).toString('base64');
