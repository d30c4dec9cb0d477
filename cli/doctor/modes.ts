// `cotal doctor`: the secrets a mesh keeps in `.cotal/` (and the credential this command uses)
// are private: folders 0700, secret files 0600, as broker/auth/secret-files.ts writes them and
// refuses to read them otherwise.
import { readdirSync, statSync } from "node:fs";
import { basename, join, resolve, sep } from "node:path";
import { secretModeProblem, type InsecureSecretError } from "../../broker/index.js";
import type { MeshInfo, MeshRoot } from "../mesh-host/mesh-root.js";
import { meshNodes } from "../mesh-host/cluster-nodes.js";
import { failed, pass, skipped, type DoctorCheck } from "./check.js";

const ID = "modes";
const TITLE = ".cotal modes";

/**
 * What is a secret in `.cotal/`. `auth/` and `creds/` hold nothing else: every folder and file in
 * them. The manager's folder holds seats' folders, whose runtime homes the agent CLI writes with
 * its own modes: there only Cotal's folders and its credential and launch files are judged. The
 * JetStream store holds every message: its folder.
 */
const SECRET_TREES = ["auth", "creds"];
const MANAGER_DIR = "manager";
/** Folders below `manager/` Cotal makes (manager, seats, one per seat, carry); deeper ones are the runtime's. */
const MANAGER_DEPTH = 2;
const MANAGER_SECRET_FILE = /(\.creds|^launch\.json)$/;

interface Findings {
  problems: Array<{ err: InsecureSecretError; kind: "file" | "dir" }>;
  seen: Set<string>;
  files: number;
  dirs: number;
}

/** Fail naming every file and folder others could read, each with its chmod. */
export function modesCheck(root: MeshRoot | undefined, info: MeshInfo | undefined, creds: string | undefined): DoctorCheck {
  if (!root && !creds) return skipped(ID, TITLE, "no mesh here (no .cotal/mesh.json at or above this folder) and no credential named (--creds, COTAL_CREDS).");
  const f: Findings = { problems: [], seen: new Set(), files: 0, dirs: 0 };
  if (root) {
    for (const tree of SECRET_TREES) walk(join(root.dir, tree), f, { depth: Infinity, file: () => true });
    walk(join(root.dir, MANAGER_DIR), f, { depth: MANAGER_DEPTH, file: (name) => MANAGER_SECRET_FILE.test(name) });
    for (const store of info ? meshNodes(root, info).map((n) => n.storeDir) : [root.defaultStoreDir]) visit(store, "dir", f);
  }
  if (creds) visit(resolve(creds), "file", f);
  const outside = creds && !(root && resolve(creds).startsWith(root.dir + sep));
  const where = [root?.dir, outside ? resolve(creds) : undefined].filter(Boolean).join(" and ");
  if (f.problems.length === 0)
    return pass(ID, TITLE, `${f.dirs} secret folder${f.dirs === 1 ? "" : "s"} 0700 and ${f.files} secret file${f.files === 1 ? "" : "s"} 0600 in ${where}.`);
  const shown = f.problems.slice(0, 5);
  const more = f.problems.length - shown.length;
  return failed(
    ID,
    TITLE,
    `${f.problems.length} secret${f.problems.length === 1 ? "" : "s"} other users could read: ${shown.map(({ err }) => `${err.path} (mode ${err.mode.toString(8).padStart(4, "0")})`).join(", ")}${more ? ` and ${more} more` : ""}.`,
    `${chmods(f.problems)} (and check who could have read them; a credential that was exposed is revoked with \`cotal revoke NAME\`).`,
  );
}

/** One command per mode wanted: `chmod 600 a b` and `chmod 700 c`. */
function chmods(problems: Findings["problems"]): string {
  const by = new Map<string, string[]>();
  for (const { err, kind } of problems) {
    const want = kind === "dir" ? "700" : "600";
    by.set(want, [...(by.get(want) ?? []), err.path]);
  }
  return `Run ${[...by].map(([mode, paths]) => `\`chmod ${mode} ${paths.map(shellWord).join(" ")}\``).join(" and ")}`;
}

function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function walk(dir: string, f: Findings, o: { depth: number; file: (name: string) => boolean }): void {
  if (!visit(dir, "dir", f)) return;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return; // unreadable: the mode check above said what it could
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (o.depth > 0) walk(p, f, { ...o, depth: o.depth - 1 });
    } else if (e.isFile() && o.file(basename(p))) visit(p, "file", f);
  }
}

/** Check one path (absent: nothing to check); true when it exists. */
function visit(path: string, kind: "file" | "dir", f: Findings): boolean {
  if (f.seen.has(path)) return true;
  f.seen.add(path);
  try {
    if (statSync(path).isDirectory() !== (kind === "dir")) return false;
  } catch {
    return false;
  }
  if (kind === "dir") f.dirs++;
  else f.files++;
  const err = secretModeProblem(path, kind);
  if (err) f.problems.push({ err, kind });
  return true;
}
