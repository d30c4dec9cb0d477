import { randomBytes } from "node:crypto";

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

/** A fresh seat incarnation id: 26 lowercase base32 characters (130 random bits, a LifecycleUid). */
export function newLifecycleUid(): string {
  const bytes = randomBytes(26);
  let out = "";
  for (const b of bytes) out += ALPHABET[b & 31];
  return out;
}
