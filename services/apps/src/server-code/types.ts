// Shapes shared by the sandbox (instance.ts), its pool and the app host's /api route.

import type { LogLevel } from "../app-logs.ts";

export type { LogLevel };

export interface SandboxLimits {
  /** CPU time per request (and for evaluating the module once), counted only while QuickJS runs. */
  cpuMs: number;
  /** Wall time per request, waiting included. */
  wallMs: number;
  memoryBytes: number;
  /** QuickJS's own stack bound (deep recursion becomes a RangeError-like InternalError, not a crash). */
  stackBytes: number;
  /** env.db / env.files / env.api / env.ai calls per request. */
  hostCalls: number;
  maxResponseBytes: number;
}

/** A request as the sandbox receives it. */
export interface SandboxRequest {
  method: string;
  url: string;
  headers: [string, string][];
  body: Uint8Array | null;
  viewer: { email: string; name: string | null } | null;
}

/** The app's Response, read out of the sandbox. */
export interface SandboxReply {
  status: number;
  headers: [string, string][];
  /** As the app gave it: text stays text (encoded once, natively), bytes stay bytes. */
  body: string | Uint8Array | null;
}

/** What a host call resolves to inside the sandbox: JSON text, or JSON text and bytes (env.api's answer). */
export type HostCallResult = string | [string, Uint8Array];

/** An expected failure of a host call: the sandbox sees an Error named HatchError with this code and message. */
export class HostCallError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 0,
  ) {
    super(message);
    this.name = "HostCallError";
  }
}

/** What one request may do outside the sandbox; the route builds it per request. */
export interface RequestHooks {
  log(level: LogLevel, message: string): void;
  /** `op`: the env call as the sandbox wrote it (JSON, read where the call is answered). */
  hostCall(op: string, body: Uint8Array | null): Promise<HostCallResult>;
  /** Told when QuickJS starts and stops running this request's code (the worker's watchdog board). */
  watch?(running: boolean): void;
  /** Told each time QuickJS checks its interrupt handler: the code is running, not stuck inside one built-in. */
  beat?(): void;
  /** Told the CPU time each entry into QuickJS used (Hatch's prelude included: the machine's time is what counts). */
  spent?(cpuMs: number): void;
  /**
   * Told once, when the request's code has run and now waits (for a host call or a timer). A request answered in its
   * first entry is never told: the answer says it ran.
   */
  waiting?(): void;
}

/** How a request ended. Every kind but `ok` and `error` discards the instance. */
export type Outcome =
  | { kind: "ok"; reply: SandboxReply }
  /** Uncaught error, or a handler that returned no Response, or a reply over the size limit. */
  | { kind: "error"; message: string; stack: string | null }
  | { kind: "cpu" }
  | { kind: "memory" }
  | { kind: "timeout" }
  /** The handler's promise can never settle: nothing it could wait for is pending. */
  | { kind: "stalled" };

/** The module could not be evaluated (a throw at its top level, no fetch handler, a limit hit while loading). */
export class ModuleLoadError extends Error {
  constructor(
    message: string,
    readonly stack_: string | null,
    readonly limit: "cpu" | "memory" | null = null,
  ) {
    super(message);
    this.name = "ModuleLoadError";
  }
}
