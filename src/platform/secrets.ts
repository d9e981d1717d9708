import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Keys derived from the one configured SECRETS_KEY: each purpose gets its own key (HKDF),
 * so a session-signing key can never decrypt a provider secret.
 */
export interface ServerKeys {
  sessionSigningKey: Uint8Array;
  /** Signs the token that binds a provider's media stream to one of our calls. */
  mediaStreamKey: Uint8Array;
  /** Seals with the current key. */
  seal(plaintext: string): string;
  /** Opens what the current key sealed, or during a rotation what the previous key sealed. */
  open(sealed: string): string;
}

const derive = (root: Buffer, info: string) => new Uint8Array(hkdfSync('sha256', root, Buffer.alloc(0), info, 32));

function rootKey(base64: string, name: string): Buffer {
  const root = Buffer.from(base64, 'base64');
  if (root.length < 32) throw new Error(`${name} must decode to at least 32 bytes.`);
  return root;
}

/**
 * `previousKeyBase64` (SECRETS_KEY_PREVIOUS) is the key being rotated away from: secrets it
 * sealed still open until `callforge secrets reseal` has sealed them again with the current one.
 */
export function deriveServerKeys(secretsKeyBase64: string, previousKeyBase64?: string): ServerKeys {
  const root = rootKey(secretsKeyBase64, 'SECRETS_KEY');
  const sessionSigningKey = derive(root, 'callforge/session-jwt');
  const encryptionKey = derive(root, 'callforge/secrets-at-rest');
  const mediaStreamKey = derive(root, 'callforge/media-stream');
  const previousKey = previousKeyBase64
    ? derive(rootKey(previousKeyBase64, 'SECRETS_KEY_PREVIOUS'), 'callforge/secrets-at-rest')
    : undefined;
  const openWith = (key: Uint8Array, sealed: string) => {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('Unrecognised sealed secret.');
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  };
  return {
    sessionSigningKey,
    mediaStreamKey,
    // AES-256-GCM; the sealed form is "v1.<iv>.<tag>.<ciphertext>" in base64url.
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', encryptionKey, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['v1', iv, cipher.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
    },
    open(sealed) {
      try {
        return openWith(encryptionKey, sealed);
      } catch (error) {
        // GCM's tag check fails under the wrong key; then the previous key may be the right one.
        if (!previousKey) throw error;
        return openWith(previousKey, sealed);
      }
    },
  };
}

export const generateSecretsKey = (): string => randomBytes(32).toString('base64');
