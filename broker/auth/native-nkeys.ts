import { createPrivateKey, createPublicKey, randomBytes, sign, verify, type KeyObject } from "node:crypto";
import type { KeyPair } from "@nats-io/nkeys";
import { CotalError } from "../../schemas/index.js";

// NATS nkeys (Ed25519 keys written in base32 with a role prefix and a CRC-16), derived and signed
// by node:crypto. @nats-io/nkeys does the curve arithmetic in tweetnacl, in JavaScript, and derives
// the key pair again on every getPublicKey() and sign(): a short `cotal` process runs that cold, in
// the interpreter: a third of `cotal up`'s CPU, and part of every connect with a credential
// (docs/performance.md, "Keys signed natively"). The text formats are nkeys' own;
// test/broker/auth/native-nkeys.test.ts checks every key and signature against theirs.

/** The roles Cotal keeps keys for (nkeys' prefix byte of each). */
export const NKEY_ROLES = { operator: 14 << 3, account: 0, user: 20 << 3 } as const;
export type NkeyRole = keyof typeof NKEY_ROLES;

const SEED_PREFIX = 18 << 3;
const PRIVATE_PREFIX = 15 << 3;
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/** DER headers of an Ed25519 private key (PKCS #8) and public key (SPKI) around their 32 raw bytes. */
const PKCS8_ED25519 = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_HEADER_BYTES = 12;

/** A seed that is not an nkey seed Cotal can sign with. */
export class InvalidSeedError extends CotalError {
  constructor(reason: string) {
    super("invalid-seed", `Not a usable nkey seed: ${reason}.`, {
      remedy: "Use a seed written by `cotal up` or `cotal mint` (a .nk file or a .creds file's USER NKEY SEED block), unedited.",
    });
  }
}

function base32(bytes: Uint8Array): string {
  let out = "";
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(acc >>> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return bits > 0 ? out + ALPHABET[(acc << (5 - bits)) & 31] : out;
}

function unbase32(text: string): Uint8Array | undefined {
  const out = new Uint8Array(Math.floor((text.length * 5) / 8));
  let acc = 0;
  let bits = 0;
  let j = 0;
  for (const ch of text) {
    const v = ALPHABET.indexOf(ch);
    if (v < 0) return undefined;
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = (acc >>> bits) & 255;
    }
    acc &= (1 << bits) - 1;
  }
  return out.subarray(0, j);
}

/** CRC-16/XMODEM, as nkeys checksums its keys. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** prefix + payload + little-endian CRC-16, in base32. */
function encodeKey(prefix: number[], payload: Uint8Array): string {
  const raw = new Uint8Array(prefix.length + payload.length + 2);
  raw.set(prefix);
  raw.set(payload, prefix.length);
  const crc = crc16(raw.subarray(0, raw.length - 2));
  raw[raw.length - 2] = crc & 255;
  raw[raw.length - 1] = crc >> 8;
  return base32(raw);
}

function seedText(role: number, raw: Uint8Array): string {
  return encodeKey([SEED_PREFIX | (role >> 5), (role & 31) << 3], raw);
}

/** The role byte and the 32 raw bytes of a seed's text, its checksum and prefixes checked. */
function decodeSeed(text: string): { role: number; raw: Uint8Array } {
  const bytes = unbase32(text.trim());
  if (!bytes) throw new InvalidSeedError("it holds a character outside base32");
  if (bytes.length !== 36) throw new InvalidSeedError(`it decodes to ${bytes.length} bytes, not 36`);
  if (crc16(bytes.subarray(0, 34)) !== (bytes[34]! | (bytes[35]! << 8))) throw new InvalidSeedError("its checksum does not match");
  if ((bytes[0]! & 248) !== SEED_PREFIX) throw new InvalidSeedError("it does not start with S (a seed)");
  const role = ((bytes[0]! & 7) << 5) | ((bytes[1]! & 248) >> 3);
  if (!Object.values(NKEY_ROLES).includes(role as never)) throw new InvalidSeedError("it is not an operator, account or user seed");
  return { role, raw: bytes.slice(2, 34) };
}

/** An nkey pair from its seed, signing with node:crypto; usable wherever nkeys' KeyPair is. */
export class NativeKeyPair implements KeyPair {
  #seed: Uint8Array | undefined;
  #raw: Uint8Array | undefined;
  #private: KeyObject | undefined;
  #public: KeyObject | undefined;
  #publicText: string;

  constructor(seed: Uint8Array | string) {
    const text = typeof seed === "string" ? seed : new TextDecoder().decode(seed);
    const { role, raw } = decodeSeed(text);
    this.#seed = new TextEncoder().encode(text.trim());
    this.#raw = raw;
    this.#private = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, raw]), format: "der", type: "pkcs8" });
    this.#public = createPublicKey(this.#private);
    this.#publicText = encodeKey([role], this.publicBytes());
  }

  private live(): { seed: Uint8Array; raw: Uint8Array; priv: KeyObject; pub: KeyObject } {
    if (!this.#seed || !this.#raw || !this.#private || !this.#public) throw new InvalidSeedError("this key pair was cleared");
    return { seed: this.#seed, raw: this.#raw, priv: this.#private, pub: this.#public };
  }

  private publicBytes(): Uint8Array {
    return new Uint8Array(this.live().pub.export({ format: "der", type: "spki" }).subarray(SPKI_HEADER_BYTES));
  }

  getPublicKey(): string {
    this.live();
    return this.#publicText;
  }

  getPrivateKey(): Uint8Array {
    const { raw } = this.live();
    const secret = new Uint8Array(64);
    secret.set(raw);
    secret.set(this.publicBytes(), 32);
    return new TextEncoder().encode(encodeKey([PRIVATE_PREFIX], secret));
  }

  getSeed(): Uint8Array {
    return this.live().seed;
  }

  sign(input: Uint8Array): Uint8Array {
    return new Uint8Array(sign(null, input, this.live().priv));
  }

  verify(input: Uint8Array, sig: Uint8Array): boolean {
    try {
      return verify(null, input, this.live().pub, sig);
    } catch {
      return false;
    }
  }

  clear(): void {
    this.#seed?.fill(0);
    this.#raw?.fill(0);
    this.#seed = this.#raw = this.#private = this.#public = undefined;
  }

  seal(): Uint8Array {
    throw new InvalidSeedError("an Ed25519 key does not seal (only curve keys do)");
  }

  open(): Uint8Array | null {
    throw new InvalidSeedError("an Ed25519 key does not open sealed messages (only curve keys do)");
  }
}

/** The key pair of a seed (a `.nk` file's bytes, or a credential's seed). */
export function nkeyFromSeed(seed: Uint8Array | string): NativeKeyPair {
  return new NativeKeyPair(seed);
}

/** A new random key pair of `role`. */
export function newNkey(role: NkeyRole): NativeKeyPair {
  return new NativeKeyPair(seedText(NKEY_ROLES[role], randomBytes(32)));
}
