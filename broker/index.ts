/**
 * Broker: the public entry of the mesh's server side and its one client. Other components (cli,
 * connector, manager) import only what is listed here; tests and benches that need more (timing
 * constants, pure policy, low-level control calls) use ./internal.js. Errors are listed with the
 * functions that throw them, so callers test `instanceof`.
 */

// Logging: one root logger per process, a child per component.
export { logger, setLogDestination, type Logger } from "./log.js";

// Typed errors, and the JetStream API errors mapped once into predicates.
export {
  AckUnconfirmedError,
  AuthenticationRefusedError,
  ConnectionClosedError,
  ConsumerLostError,
  ControlCallError,
  JoinFailedError,
  MeshServiceUnavailableError,
  MeshUnavailableError,
  NotJoinedError,
  PermissionDeniedError,
  StorageLimitError,
  StreamConflictError,
  UnknownMentionError,
} from "./errors.js";
export {
  isConsumerNotFound,
  isNoMessageFound,
  isNoResponders,
  isPermissionDenied,
  isStreamNotFound,
  isWrongLastSequence,
  permissionViolation,
} from "./js-errors.js";

// The nats-server binary, connecting with a credential, and JetStream access.
export {
  findNatsServer,
  isAtLeast,
  isNewerThanTested,
  NatsServerNotFoundError,
  NatsServerTooOldError,
  natsServerVersion,
  MIN_NATS_SERVER,
  NEWEST_TESTED_NATS_SERVER,
  privateBinDir,
  SUPPORTED_NATS_SERVERS,
} from "./nats-binary.js";
export { FULL_DISK_REMEDY, fullDiskRisk, handlesStoreWriteErrors, STORE_WRITE_ERRORS_HANDLED } from "./full-disk-risk.js";
export { ensureNatsServer, NatsServerFetchError, runNatsInstaller, type EnsureNatsServerOptions } from "./nats-fetch.js";
export {
  connectMesh,
  credsCaller,
  credsClaims,
  credsFileOwner,
  InvalidCredsError,
  parseMeshLink,
  serverUrl,
  serverUrls,
  type CredsClaims,
  type MeshAddress,
  type MeshLink,
} from "./connect.js";
export { JS_OPTIONS, jetStreamConnection } from "./js-access.js";

// Provisioning a space and the mesh service that answers the control rail.
export {
  clusterReplicas,
  ensureSpace,
  STORAGE_DEFAULTS,
  storageRefusalError,
  StorageLimitsInput,
  type ProvisionReport,
  type SpaceOptions,
  type StorageLimits,
} from "./provision.js";
export { MeshService, type MeshServiceOptions } from "./mesh-service.js";
export { FIX_OFF_ENV, fixOff, fixesOff, SWITCHABLE_FIXES, SwitchableFix, UnknownFixError } from "./fix-off.js";
export { callControl, controlCaller, serveControl, type ControlCallOptions, type ControlCaller, type ControlHandler, type ControlHandlers } from "./control.js";

// The endpoint (one seat's client) and what it reads: deliveries, roster, channels, history.
export { Endpoint, type Content, type EndpointOptions, type Receipt, type SendOptions } from "./endpoint.js";
export type { ConsumerStatus } from "./durable-reader.js";
export type { PresencePatch, PresenceState } from "./presence-state.js";
export type { Delivery, DeliverySource } from "./delivery.js";
export { followPresence, Roster, watchPresence, type RosterEntry, type RosterSnapshotItem } from "./roster.js";
export { ChannelRegistry, type ResolvedChannel } from "./channel-registry.js";
export { collectHistory, type HistoryQuery } from "./history.js";
export {
  answerApproval,
  approvalEventsOf,
  openApprovals,
  OpenApprovalSet,
  watchApprovals,
  type AnswerResult,
  type ApprovalEvent,
  type OpenApproval,
  type OpenApprovalsOptions,
} from "./approvals.js";
export { scanStream } from "./stream-scan.js";
export { verifyEnvelope, type VerifiedMessage } from "./verify.js";
export { readDmInbox, type DmInboxRead } from "./dm-inbox.js";
export { sendDirectMail, type DirectMail } from "./stored-publish.js";

// Artifacts and transcript transfers over the control rail.
export { ArtifactDigestMismatchError, ArtifactNotFoundError, fetchArtifact, putArtifact, type ArtifactPart, type ControlParty } from "./artifacts.js";
export { callXfer, XferService, type XferServiceOptions } from "./xfer.js";
export { uploadTransfer, type UploadResult } from "./xfer-upload.js";
export { TransferIncompleteError, TransferReceiver, type Received, type ReceiverOptions } from "./xfer-receive.js";

// Credentials and accounts: the auth store, minting, revocation, secret files, permission profiles.
export {
  AuthStore,
  type AuthStoreOptions,
  checkMintSpec,
  clientsAccount,
  DEFAULT_ACCOUNT_STORAGE,
  DEFAULT_CLIENT_CONNECTIONS,
  InsecureSecretError,
  LEAF_SUFFIX,
  MintRefusedError,
  PROFILES,
  permissionsFor,
  PROFILE_LIMITS,
  pushSpaceAccounts,
  SERVER_MAX_PENDING,
  requestCredential,
  awaitCredentialCarried,
  LeafScopeWaitError,
  requestRevoke,
  SERVICE_PRINCIPALS,
  serviceCreds,
  readSecret,
  secretModeProblem,
  writeSecret,
  type AccountStorageLimits,
  type MintRequest,
  type Profile,
} from "./auth/index.js";

// Backup and restore (cotal backup / restore): a stream's snapshot through JetStream's own API,
// the credential they connect with, and a space's identity carried from one auth store to another.
export { backupCreds, BACKUP_PRINCIPAL } from "./auth/backup-creds.js";
export { adoptSpaceIdentity, IdentityIncompleteError, readSpaceIdentity, type AdoptedIdentity, type IdentityFile } from "./auth/space-identity.js";
export { restoreStream, SNAPSHOT_CHUNK_BYTES, snapshotStream, StreamRestoreError, StreamSnapshotError, type StreamSnapshotMeta } from "./snapshot.js";

// Plumbing the cli and the connector share: lock files naming their holder, bounded id sets.
export { takeLockFile, type LockFileOptions, type LockFileTake } from "./lock-file.js";
export { BoundedSet } from "./bounded-set.js";
export { fixedDelays, retry } from "./retry.js";
