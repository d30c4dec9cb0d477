// Runs a CommonJS bundle (dist/cotal.cjs, dist/cotal-service.cjs) with a V8 code cache: the
// bytecode V8 compiled for the bundle the first time is kept in the user's cache folder and handed
// back to V8 by every later start, which then neither parses nor compiles what it already had.
// Node 20 has no compile cache of its own (module.enableCompileCache is Node 22) and none for ES
// modules, hence CommonJS bundles behind the small ESM launchers package.json's bin names.
// Figures: docs/performance.md ("A code cache for the CLI").
//
// A code cache is code: V8 runs the bytecode it holds. So it is read only from a folder and a file
// this user owns that nobody else may write (as ssh treats its keys), and written 0600 in a 0700
// folder, atomically; anything else is left alone and the bundle is compiled from its source.
// This module is the launchers' only import: node built-ins alone, nothing that logs.
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import vm from "node:vm";

/**
 * What a start did with the cache, printed to stderr when COTAL_CODE_CACHE=report: `used`; `written`
 * (there was none); `rejected` (V8 refused it: another Node, or a damaged file) and written anew;
 * `untrusted` (not this user's own, or writable by others: not read); `unwritten` (none, and none
 * could be written); `unavailable` (no cache folder: no HOME).
 */
export type CacheOutcome = "used" | "written" | "rejected" | "untrusted" | "unwritten" | "unavailable";

/** The folder code caches live in: `$XDG_CACHE_HOME/cotal`, else `~/.cache/cotal`; undefined when neither can be told. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, "cotal");
  const home = env.HOME ?? os.homedir();
  return home && path.isAbsolute(home) ? path.join(home, ".cache", "cotal") : undefined;
}

/** The caches of one installed bundle share a prefix (two installs never evict each other's). */
const prefixOf = (bundle: string): string => `${path.basename(bundle)}-${createHash("sha256").update(bundle).digest("hex").slice(0, 8)}-`;

/**
 * The cache file of one build of a bundle under one Node: named by the bundle's content, since V8
 * checks only a source's length against a cache, so another build of the same length must never
 * find this one.
 */
export function cacheFileOf(dir: string, bundle: string, source: Buffer): string {
  // The file's bytes hash as its UTF-8 text would, without decoding and encoding 2 MB again or
  // joining it to the rest (with the garbage it made, about 40 ms of a `cotal --version`'s CPU): the
  // same names as a hash of the text.
  const digest = createHash("sha256").update(source).update(`\0${process.version}\0${process.arch}`).digest("hex");
  return path.join(dir, `${prefixOf(bundle)}${digest.slice(0, 12)}.v8`);
}

/** Whether what stat says is this user's own and writable by nobody else. */
const privateStat = (st: { uid: number; mode: number }): boolean => st.uid === process.getuid?.() && (st.mode & 0o022) === 0;

/** Whether a path is this user's own and writable by nobody else (and not a link someone could swap). */
export function ownedAndPrivate(file: string): boolean {
  try {
    const st = lstatSync(file);
    return !st.isSymbolicLink() && privateStat(st);
  } catch {
    return false;
  }
}

/**
 * The cached bytecode, when there is a cache this user may trust: the folder checked first, the
 * file opened without following a link and judged by the descriptor it is read from, so what is
 * checked is what is read.
 */
function readCache(dir: string, file: string): { data?: Buffer; untrusted: boolean } {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    return { untrusted: (err as NodeJS.ErrnoException).code === "ELOOP" };
  }
  try {
    if (!ownedAndPrivate(dir) || !privateStat(fstatSync(fd))) return { untrusted: true };
    return { data: readFileSync(fd), untrusted: false };
  } finally {
    closeSync(fd);
  }
}

/** Write the cache atomically (0600 in a 0700 folder) and drop older builds' caches of the same bundle. */
function writeCache(dir: string, bundle: string, file: string, data: Buffer): boolean {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!ownedAndPrivate(dir)) return false;
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode: 0o600, flag: "wx" });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  const prefix = prefixOf(bundle);
  for (const f of readdirSync(dir)) if (f.startsWith(prefix) && f.endsWith(".v8") && f !== path.basename(file)) unlinkSync(path.join(dir, f));
  return true;
}

/**
 * Run the CommonJS bundle `bundle` in this process as Node would `require` it, with its code cache.
 * `COTAL_CODE_CACHE=off` compiles from source and keeps nothing; `=report` prints what was done
 * with the cache on stderr (one line, at exit).
 */
export function runBundle(bundle: string): void {
  const mode = process.env.COTAL_CODE_CACHE;
  const bytes = readFileSync(bundle);
  const source = bytes.toString("utf8");
  const dir = mode === "off" ? undefined : cacheDir();
  const file = dir && cacheFileOf(dir, bundle, bytes);
  const cached = dir && file ? readCache(dir, file) : { untrusted: false };
  // No `import()` runs inside the script: Node 20 loses a script's dynamic-import callback when its
  // code comes from a cache ("A dynamic import callback was not specified"), so the build turns the
  // bundle's `import("node:…")` into require and hands the console's Ink import to `__cotalImport`,
  // which imports from this ES module.
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname, __cotalImport) {${source}\n})`, {
    filename: bundle,
    ...(cached.data ? { cachedData: cached.data } : {}),
  });
  let outcome: CacheOutcome = !dir ? "unavailable" : cached.untrusted ? "untrusted" : cached.data ? "used" : "written";
  if (dir && file && (!cached.data || script.cachedDataRejected)) {
    if (cached.data) outcome = "rejected";
    // At exit the cache holds what this run compiled, the functions it called too, not only the top level.
    process.once("exit", () => {
      let wrote = false;
      try {
        wrote = writeCache(dir, bundle, file, script.createCachedData());
      } catch {
        // A cache that cannot be written costs the next start its compile, nothing else.
      }
      if (!wrote && outcome === "written") outcome = "unwritten";
    });
  }
  if (mode === "report") process.once("exit", () => process.stderr.write(`cotal: code cache ${outcome}${file ? ` (${file})` : ""}\n`));
  const module = { exports: {} as unknown, filename: bundle, id: bundle };
  const run = script.runInThisContext() as (e: unknown, r: NodeJS.Require, m: unknown, f: string, d: string, i: (s: string) => Promise<unknown>) => void;
  run(module.exports, createRequire(bundle), module, bundle, path.dirname(bundle), (specifier) => import(specifier));
}
