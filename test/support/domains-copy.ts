// One copy of the domains service for test/domains-scale.e2e.test.ts: started exactly as services/domains/src/main.ts
// starts it (runServiceMain: real NATS and Postgres from the environment, signals), plus a job kind that exists only
// here, `test.count`, whose every committed run inserts one row into `scale_test.runs` in the completing transaction.
// The table has no unique key, so a job that ran twice would show two rows.
import { runServiceMain } from "@hatch/platform";
import { sql } from "drizzle-orm";
import type { JobKind } from "../../services/domains/src/jobs/queue.ts";
import { DOMAINS_MIGRATIONS, startDomainsService } from "../../services/domains/src/service.ts";

const countKind: JobKind = {
  async run(job, signal) {
    // Holds its claim a while (payload.ms), like a DNS or registrar call; gives up early when the copy stops.
    const ms = Number(job.payload.ms ?? 0);
    if (ms > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
    return {
      apply: async (tx) => {
        await tx.execute(sql`insert into scale_test.runs (job_key, claim) values (${job.key}, ${job.lockedBy ?? ""})`);
      },
    };
  },
};

await runServiceMain({
  name: "domains",
  migrationsFolder: DOMAINS_MIGRATIONS,
  start: (deps) => startDomainsService(deps, { extraJobKinds: { "test.count": countKind } }),
});
