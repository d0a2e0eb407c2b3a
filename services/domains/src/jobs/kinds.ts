import type { DomainsContext } from "../context.ts";
import type { JobKind } from "./queue.ts";

/** Every kind of stage work, by name (the `kind` column). */
export function jobKinds(_ctx: () => DomainsContext): Record<string, JobKind> {
  return {};
}
