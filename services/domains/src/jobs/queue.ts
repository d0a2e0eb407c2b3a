import {
  cancelJob as cancelJobIn,
  enqueueJob as enqueueJobIn,
  JobQueue as PlatformJobQueue,
  type Database,
  type JobKind,
  type JobOutcome,
  type JobQueueOptions as PlatformJobQueueOptions,
  type JobRow,
  type NewJob,
} from "@hatch/platform";
import { jobs } from "../db/schema.ts";

// The platform's job queue (shared/platform/src/jobs/queue.ts: leased claims, renewed while running, a stale holder
// commits nothing) on the domains schema's job table: DNS, certificate and registrar stages.

export type { JobKind, JobOutcome, JobRow, NewJob };
export type JobQueueOptions = Omit<PlatformJobQueueOptions, "table">;

export class JobQueue extends PlatformJobQueue {
  constructor(options: JobQueueOptions) {
    super({ ...options, table: jobs });
  }
}

/** Queues a job inside the caller's transaction (see the platform's enqueueJob). */
export function enqueueJob(tx: Pick<Database, "insert">, job: NewJob): Promise<void> {
  return enqueueJobIn(tx, jobs, job);
}

/** Ends an open job inside the caller's transaction. */
export function cancelJob(tx: Pick<Database, "update">, kind: string, key: string): Promise<void> {
  return cancelJobIn(tx, jobs, kind, key);
}
