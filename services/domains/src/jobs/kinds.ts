import type { DomainsContext } from "../context.ts";
import { domainStageKinds } from "./domain-stages.ts";
import type { JobKind } from "./queue.ts";

/** Every kind of stage work, by name (the `kind` column). */
export function jobKinds(ctx: () => DomainsContext): Record<string, JobKind> {
  return { ...domainStageKinds(ctx) };
}
