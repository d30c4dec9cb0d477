import { existsSync } from "node:fs";
import { AuthStore, pushSpaceAccounts, serviceCreds, writeSecret, type AccountStorageLimits } from "../../broker/index.js";
import type { MeshRoot } from "./mesh-root.js";

/** What a static mesh needs before its server starts. */
export interface StaticAuth {
  store: AuthStore;
  /** The nats-server configuration fragment (operator, system account, resolver). */
  fragment: string;
  /** The operator-side credential commands on this host use. */
  cliCreds: string;
  /** The mesh service's credential. */
  meshCreds: string;
  /** The space's account was created now (a running server must be told about it). */
  spaceCreated: boolean;
}

/**
 * Create (once) the operator, system account and the space's account under `.cotal/auth/`,
 * and the service credentials of the mesh service and this host's CLI. A second run reuses
 * them. The mesh service mints every other credential at run time.
 */
export async function prepareStaticAuth(root: MeshRoot, space: string, account: Partial<AccountStorageLimits> = {}): Promise<StaticAuth> {
  const store = await AuthStore.open(root.authDir);
  const { created } = await store.ensureSpace(space, account);
  const creds = { cli: root.credsFile(space, "cli"), mesh: root.credsFile(space, "mesh") };
  for (const who of ["cli", "mesh"] as const) {
    if (!created && existsSync(creds[who])) continue;
    writeSecret(creds[who], await serviceCreds(store, space, who));
  }
  return { store, fragment: await store.serverConfig(root.resolverDir), cliCreds: creds.cli, meshCreds: creds.mesh, spaceCreated: created };
}

/** Tell a running server about a space account created after it started. */
export async function publishSpaceAccount(auth: StaticAuth, server: string, space: string): Promise<void> {
  await pushSpaceAccounts(auth.store, server, space);
}
