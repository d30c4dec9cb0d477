import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../broker/index.js";
import type { RuntimeHost } from "../runtime/index.js";
import type { BudgetCaps } from "./budget.js";
import type { LauncherOptions } from "./seat-launcher.js";

/** What a manager is started with (ManagerService.start; the CLI fills it from `cotal manager`'s flags). */
export interface ManagerOptions extends LauncherOptions {
  /** This manager's instance id (stable across restarts: kept in its state dir by the CLI). */
  instance: string;
  /** The connection JetStream requests go over (see broker jetStreamConnection). */
  jsConnection: NatsConnection;
  maxSeats?: number;
  /** How long a launched seat has to appear in presence before it is reported `uncertain` (default 30 s). */
  readinessMs?: number;
  /** Restarts allowed within `windowMs` before a crash-looping seat is retired (default 3 in 60 s). */
  restarts?: number;
  windowMs?: number;
  heartbeatMs?: number;
  /** The runtimes (runtimes/) this manager can start, by name: where each one's CLI is (absent: refused, saying why). */
  runtimes?: Readonly<Record<string, RuntimeHost>>;
  /** Budget caps for runs (default: COTAL_DAILY_BUDGET_USD / COTAL_TASK_BUDGET_USD from the environment). */
  budget?: BudgetCaps;
  /**
   * The manager's folder: where the helpers of a spawner started by hand work, and where their
   * agent files are read (a spawner that is a seat of this manager: its own folder). Default: the
   * process's working directory.
   */
  folder?: string;
  log: Logger;
}
