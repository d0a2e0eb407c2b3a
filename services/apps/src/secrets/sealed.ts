import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

// Secret values and AI keys at rest: AES-256-GCM with a random 96-bit IV per value, and associated data that names
// the row (app and secret name, or key scope, owner and provider), so a sealed value copied into another row does not
// open. Several keys may be configured: the first seals, any opens (key rotation, see SECURITY.md).

export interface SealingKey {
  /** Stored beside each sealed value, so the right key opens it after a rotation. */
  id: string;
  key: Buffer;
}

export interface Sealed {
  keyId: string;
  /** base64url(iv | tag | ciphertext) */
  sealed: string;
}

export class Sealer {
  private readonly byId: ReadonlyMap<string, Buffer>;

  constructor(private readonly keys: readonly SealingKey[]) {
    if (keys.length === 0) throw new Error("Sealer needs at least one key");
    for (const { id, key } of keys) {
      if (key.length !== 32) throw new Error(`sealing key ${id} must be 32 bytes`);
    }
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** The id of the key new values are sealed with. */
  get currentKeyId(): string {
    return this.keys[0]!.id;
  }

  seal(plaintext: string, associated: string): Sealed {
    const { id, key } = this.keys[0]!;
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", key, iv);
    cipher.setAAD(Buffer.from(associated, "utf8"));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return { keyId: id, sealed: Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url") };
  }

  /** The plaintext; throws when the key is unknown or the value, its key or its associated data do not match. */
  open(value: Sealed, associated: string): string {
    const key = this.byId.get(value.keyId);
    if (!key) throw new Error(`no sealing key with id ${value.keyId} is configured`);
    const raw = Buffer.from(value.sealed, "base64url");
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(associated, "utf8"));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
  }
}

/** Associated data of an app's secret. */
export const secretAad = (appId: string, name: string) => `secret:${appId}:${name}`;
/** Associated data of an AI key. */
export const aiKeyAad = (scope: string, ownerId: string, provider: string) => `ai-key:${scope}:${ownerId}:${provider}`;
