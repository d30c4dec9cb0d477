/** Static (operator-mode) authentication: keys, profiles, minting and revocation. */
export * from "./secret-files.js";
export * from "./permissions.js";
export * from "./credential-limits.js";
export * from "./connection-warden.js";
export * from "./auth-store.js";
export * from "./mint.js";
export * from "./revoke.js";
export * from "./identity-registry.js";
export * from "./mint-client.js";
export * from "./leaf-scope.js";
export * from "./request-info.js";
export * from "./reader-calls.js";
export { clientServices } from "./space-accounts.js";
