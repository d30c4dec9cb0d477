import { randomBytes } from "node:crypto";
import { lstatSync, readFileSync } from "node:fs";
import type { z } from "zod";
import { describeIssues, LaunchMaterial } from "../schemas/index.js";
import { writeSecret } from "../broker/index.js";
import { SeatRefusedError } from "./errors.js";

/** A per-launch secret for the seat's hooks (the connector's control token). */
export function newControlToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Write a seat's launch material, 0600, refusing anything that does not match the schema. */
export function writeLaunchMaterial(file: string, material: z.input<typeof LaunchMaterial>): LaunchMaterial {
  const parsed = LaunchMaterial.parse(material);
  writeSecret(file, `${JSON.stringify(parsed, null, 2)}\n`);
  return parsed;
}

/** Read launch material a manager wrote: a regular 0600 file of ours that matches the schema. */
export function readLaunchMaterial(file: string): LaunchMaterial {
  let text: string;
  try {
    const st = lstatSync(file);
    if (!st.isFile()) throw new Error("not a regular file");
    if ((st.mode & 0o077) !== 0) throw new Error(`mode ${(st.mode & 0o777).toString(8)} lets others read it`);
    text = readFileSync(file, "utf8");
  } catch (cause) {
    throw new SeatRefusedError(
      "bad-launch-material",
      `Cannot use launch material ${file}: ${(cause as Error).message}.`,
      "Launch seats through the manager (`cotal spawn`), which writes it 0600.",
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new SeatRefusedError("bad-launch-material", `Launch material ${file} is not JSON.`, "Launch seats through the manager (`cotal spawn`).");
  }
  const r = LaunchMaterial.safeParse(json);
  if (!r.success)
    throw new SeatRefusedError(
      "bad-launch-material",
      `Launch material ${file}: ${describeIssues(r.error).join("; ")}.`,
      "Launch seats through the manager (`cotal spawn`).",
    );
  return r.data;
}
