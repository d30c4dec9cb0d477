import type { Export, Import } from "@nats-io/jwt";
import { BEAT_TOKEN, DELIVERY, JS_API, names, patterns, SUBJECT_KINDS, XFER_TOKEN } from "../../schemas/index.js";

/**
 * The account layout of one space in static mode (docs/security.md, "Account isolation").
 *
 * NATS does not permission-check reply subjects: a request a user may make, sent with a reply
 * inside `$JS.API.>` or another identity's subjects, makes the server's (or a service's)
 * answer act there with the *account's* rights. So the space is two accounts:
 *
 * - the **data account** holds every stream and bucket; only the mesh service is in it;
 * - the **clients account** holds every minted identity and has no JetStream of its own. It
 *   imports, as services, exactly the subjects and JetStream API calls clients need.
 *
 * A request crossing a service import carries a reply the server invents (`_R_.…`) in the data
 * account, mapped back to the caller's reply in the clients account; an answer delivered there
 * is not forwarded through the clients account's imports again, so it can act on nothing.
 * Live traffic (channel posts, presence writes) is delivered to subscribers in the clients
 * account directly, because every client publishes there.
 */

/** Streams whose durables clients bind (info, pull, ack); they never create or delete them. */
function boundStreams(space: string): string[] {
  return [names.chatStream(space), names.dmStream(space), names.taskStream(space)];
}

/** One exported/imported service: subject and whether its answer is a stream of messages. */
interface ServiceSubject {
  name: string;
  subject: string;
  stream?: boolean;
  /**
   * The import shares who asked: the server stamps each request crossing it with a
   * `Nats-Request-Info` header naming the connection it came from (its user key, the JWT's name
   * and tags; a leaf node's traffic is named as the leaf credential, whatever header it brought).
   * The control rail only: the header carries the user's JWT, too heavy for every post.
   */
  share?: boolean;
}

/**
 * The kinds of the space's subjects (schemas/subjects.ts), each imported on its own so the control
 * rail (`ep`) can share the caller while posts, DMs, anycasts, seat-log records, beats and
 * transfer chunks (`xfer`, stored in each manager instance's transfer stream) do not.
 */
const SPACE_KINDS = [...SUBJECT_KINDS, BEAT_TOKEN, XFER_TOKEN] as const;

/**
 * The import subject of one kind of the space's subjects. Written so a leaf connection keeps it:
 * the hub sends a leaf node its interest in an import only while the leaf credential may publish
 * under it, and nats-server (2.10.27, and its main branch) judges a wildcard import by
 * Sublist.ReverseMatch, which for a subject ending in `>` finds allow patterns through literal
 * tokens only, never below a `*`. At connect every import is sent regardless; after the next
 * update of the clients account (any revocation) the ones failing that check are withdrawn for
 * good. Imported as `seat.>`, the leaf's own seat log `seat.*.*.local.<host>` was lost at the
 * first `cotal stop` (no responders: "jetstream is not enabled"). The seat log's full grammar,
 * a `*` for each of its four tokens, covers the same subjects and keeps it (docs/security.md,
 * "Leaf-node hosts"). Acks below, likewise.
 */
function kindImport(space: string, kind: (typeof SPACE_KINDS)[number]): string {
  const root = patterns.space(space).slice(0, -1);
  // Every seat-log subject is `seat.<owner>.<actor>.<writerOwner>.<writerActor>` (schemas/subjects.ts).
  return kind === "seat" ? `${root}seat.*.*.*.*` : `${root}${kind}.>`;
}

/** Every subject the clients account may reach in the data account, and nothing else. */
export function clientServices(space: string): ServiceSubject[] {
  const kv = (bucket: string) => `$KV.${bucket}.>`;
  return [
    // Posts, DMs, anycasts, the seat log, beats, transcript chunks and the control rail: the stream
    // stores, the mesh service answers; both answer on the import's private reply.
    ...SPACE_KINDS.map((kind) => ({
      name: kind === "ep" ? "cotal" : `cotal-${kind}`,
      subject: kindImport(space, kind),
      ...(kind === "ep" ? { share: true } : {}),
    })),
    { name: "presence", subject: kv(names.presenceBucket(space)) },
    { name: "channels", subject: kv(names.channelsBucket(space)) },
    { name: "managers", subject: kv(names.managersBucket(space)) },
    // Read-only JetStream API (status, channel registry, pending counts for the operator tool).
    { name: "stream-info", subject: `${JS_API}.STREAM.INFO.*` },
    { name: "stream-names", subject: `${JS_API}.STREAM.NAMES` },
    { name: "stream-msg-get", subject: `${JS_API}.STREAM.MSG.GET.*` },
    // Binding a durable: info, pull (its answer is many messages) and ack.
    ...boundStreams(space).flatMap((s) => [
      { name: `info-${s}`, subject: `${JS_API}.CONSUMER.INFO.${s}.*` },
      { name: `next-${s}`, subject: `${JS_API}.CONSUMER.MSG.NEXT.${s}.*`, stream: true },
      // `*.>`, not `>`: the leaf's ack permission `$JS.ACK.<stream>.*.>` holds a `*` there (kindImport).
      { name: `ack-${s}`, subject: `$JS.ACK.${s}.*.>` },
    ]),
  ];
}

/**
 * The data account's exports: the services above, public to accounts this operator signs. A pull
 * (a streamed answer) keeps its reply route `pullReplyThresholdMs` (DELIVERY.pullReplyThresholdMs;
 * a test may shorten it to see a pull outlive it).
 */
export function dataExports(space: string, pullReplyThresholdMs: number = DELIVERY.pullReplyThresholdMs): Export[] {
  return clientServices(space).map(
    (s) =>
      ({
        name: s.name,
        subject: s.subject,
        type: "service",
        // Nanoseconds, as nats-server reads a JWT's durations.
        ...(s.stream ? { response_type: "Stream", response_threshold: pullReplyThresholdMs * 1_000_000 } : {}),
      }) as Export,
  );
}

/**
 * The clients account's imports of the data account's services, under the same subjects. Never
 * remapped: on nats-server 2.9.10 an answer aimed at a remapped wildcard import crashes the
 * server (a panic in its subject transform), and any client can aim answers.
 */
export function clientImports(space: string, dataAccountPub: string): Import[] {
  return clientServices(space).map(
    (s) => ({ name: s.name, subject: s.subject, account: dataAccountPub, type: "service", ...(s.share ? { share: true } : {}) }) as Import,
  );
}
