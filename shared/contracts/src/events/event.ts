import { z } from "zod";
import { CLIENT_KINDS, SERVICE_NAMES, type ServiceName } from "../tools/define.ts";
import type { CallContext } from "../ctx.ts";
import { randomId } from "../ids.ts";

// What every service tells the others about a change (architecture, "Events"). An event travels as JSON on
// `events.<service>.<entity>.<verb>` in the JetStream stream EVENTS; `id` is its Nats-Msg-Id, so a relay that
// publishes it twice stores it once, and consumers use it to apply it once.

/** A subject token: lowercase, digits and `_` (no dots or wildcards). */
const TOKEN = /^[a-z][a-z0-9_]*$/;

export const EventActorSchema = z.object({ userId: z.string(), email: z.string(), name: z.string() });
export type EventActor = z.infer<typeof EventActorSchema>;

export const HatchEventSchema = z.object({
  v: z.literal(1),
  id: z.string().min(1).max(64),
  /** ISO 8601 time of the change. */
  time: z.string(),
  service: z.enum(SERVICE_NAMES),
  /** What changed, e.g. app, member, invitation, org, domain. */
  entity: z.string().regex(TOKEN),
  /** What happened to it, in the past tense, e.g. published, paused, removed. */
  verb: z.string().regex(TOKEN),
  /** Who did it; null for the system (a background job, a webhook). */
  actor: EventActorSchema.nullable(),
  /** Which AI client did it, as the gateway identified it. */
  client: z.object({ kind: z.enum(CLIENT_KINDS), name: z.string() }).nullable(),
  /** The OAuth grant the call came through. */
  grant: z.string().nullable(),
  /** The app's address when the change concerns one app. */
  app: z.string().nullable(),
  /** The account the change happened in; `org` is the same id when that account is an organization. */
  account: z.string().nullable(),
  org: z.string().nullable(),
  /** One line in plain words, for the activity log. */
  summary: z.string(),
  details: z.record(z.string(), z.unknown()),
});
export type HatchEvent = z.infer<typeof HatchEventSchema>;

/** The subject an event is published on (before the bus prefix). */
export function eventSubject(event: Pick<HatchEvent, "service" | "entity" | "verb">): string {
  return `events.${event.service}.${event.entity}.${event.verb}`;
}

export interface NewEventFields {
  entity: string;
  verb: string;
  summary: string;
  app?: string | null;
  /** Defaults to the caller's account and organization. */
  account?: string | null;
  org?: string | null;
  details?: Record<string, unknown>;
  /** Defaults to now; tests pass a fixed time. */
  time?: Date;
}

/** An event about a change made by the caller of `ctx` (or by the system when ctx is null). */
export function newEvent(service: ServiceName, ctx: CallContext | null, fields: NewEventFields): HatchEvent {
  if (!TOKEN.test(fields.entity) || !TOKEN.test(fields.verb)) {
    throw new Error(`event entity and verb must be subject tokens: "${fields.entity}.${fields.verb}"`);
  }
  return {
    v: 1,
    id: `evt_${randomId(16)}`,
    time: (fields.time ?? new Date()).toISOString(),
    service,
    entity: fields.entity,
    verb: fields.verb,
    actor: ctx ? { userId: ctx.sub, email: ctx.email, name: ctx.name } : null,
    client: ctx ? { kind: ctx.client.kind, name: ctx.client.name } : null,
    grant: ctx?.grant ?? null,
    app: fields.app ?? null,
    account: fields.account !== undefined ? fields.account : (ctx?.account ?? null),
    org: fields.org !== undefined ? fields.org : (ctx?.org ?? null),
    summary: fields.summary,
    details: fields.details ?? {},
  };
}
