// The mixed load: each user runs one MCP worker (reads and changes across all four services) and one data
// worker (documents added through the app host, as an app's page adds them). Every call is logged with its
// outcome; every change the service acknowledged is remembered so the database can be checked afterwards.
import { getToolContract } from "@hatch/contracts";
import { answeredNotImplemented, isClearError, messageOf, type Caller, type Outcome } from "./mcp.ts";

export interface CallRecord {
  start: number;
  end: number;
  user: string;
  /** A tool name, or `data.insert` for a document added through the app host. */
  op: string;
  /** The process that answers it (`apps` for the app host). */
  service: string;
  kind: Outcome["kind"];
  clear?: boolean;
  text?: string;
}

export interface LoadUser {
  label: string;
  email: string;
  caller: Caller;
  orgId: string;
  address: string;
  appName: string;
  /** Acknowledged publishes (version numbers) and how many publishes were attempted, initial one included. */
  ackedVersions: { version: number; at: number }[];
  publishAttempts: number;
  /** Emails added by share calls: acknowledged, and every one attempted (each call adds one new email). */
  ackedShares: { email: string; at: number }[];
  shareAttempts: string[];
  /** Invitations: acknowledged ids, and attempted emails. */
  ackedInvitations: { email: string; at: number }[];
  inviteAttempts: string[];
  rollbacksAcked: number;
  rollbackAttempts: number;
  /** Documents the app host acknowledged (id and the nonce each carried), and nonces attempted. */
  ackedDocs: { id: string; nonce: string; at: number }[];
  docAttempts: number;
}

export const COLLECTION = "notes";
export const SERVICE_JSON = JSON.stringify({ collections: { [COLLECTION]: { read: "anyone", create: "anyone" } } });

export function appFiles(version: string) {
  return [
    { path: "index.html", content: `<!doctype html><title>Reliability</title><h1>${version}</h1>`, encoding: "utf8" },
    { path: "service.json", content: SERVICE_JSON, encoding: "utf8" },
  ];
}

export class CallLog {
  readonly records: CallRecord[] = [];
  add(record: CallRecord) {
    this.records.push(record);
  }
}

export interface LoadOptions {
  appHost: (address: string) => string;
  log: CallLog;
  /** Pause between one worker's calls. */
  pauseMs: number;
  /** A worker stops after this many calls (the run's bound on count). */
  maxCallsPerWorker: number;
  runId: string;
}

/** Runs until stop() (or the count bound); returns when every worker has finished its current call. */
export function startLoad(users: LoadUser[], options: LoadOptions): { stop(): Promise<void> } {
  let running = true;
  let counter = 0;
  const unique = (prefix: string) => `${prefix}-${options.runId}-${++counter}`;

  const record = (user: LoadUser, op: string, service: string, start: number, answer: Outcome) => {
    const outcome: Outcome = answeredNotImplemented(answer)
      ? { kind: "ok", data: {}, text: answer.kind === "tool_error" ? answer.text : "", ms: answer.ms }
      : answer;
    options.log.add({
      start,
      end: Date.now(),
      user: user.label,
      op,
      service,
      kind: outcome.kind,
      clear: outcome.kind === "tool_error" ? outcome.clear : undefined,
      text: outcome.kind === "ok" || outcome.kind === "hung" ? undefined : outcome.text.slice(0, 300),
    });
  };

  async function mcpStep(user: LoadUser, step: number) {
    const pick = step % 10;
    let tool: string;
    let args: Record<string, unknown>;
    let after: (outcome: Outcome) => void = () => {};
    switch (pick) {
      case 0:
      case 5: {
        tool = "publish";
        args = { address: user.address, files: appFiles(unique("v")) };
        user.publishAttempts++;
        after = (o) =>
          o.kind === "ok" &&
          typeof o.data.version === "number" &&
          user.ackedVersions.push({ version: o.data.version, at: Date.now() });
        break;
      }
      case 1: {
        const email = `${unique("peer")}@reliability.test`;
        tool = "share";
        args = { address: user.address, add: [email] };
        user.shareAttempts.push(email);
        after = (o) => o.kind === "ok" && user.ackedShares.push({ email, at: Date.now() });
        break;
      }
      case 2: {
        const email = `${unique("invitee")}@reliability.test`;
        tool = "org_invite";
        args = { emails: [email], role: "member" };
        user.inviteAttempts.push(email);
        after = (o) => {
          if (o.kind !== "ok") return;
          // structuredContent names the invited emails (each attempt's email is new, so it names one invitation).
          for (const email of (o.data.invited ?? []) as string[]) user.ackedInvitations.push({ email, at: Date.now() });
        };
        break;
      }
      case 3: {
        const current = user.ackedVersions.at(-1)?.version ?? 1;
        tool = "rollback";
        args = { address: user.address, version: Math.max(1, current - 1) };
        user.rollbackAttempts++;
        after = (o) => o.kind === "ok" && o.data.status === "rolled_back" && user.rollbacksAcked++;
        break;
      }
      case 4:
        tool = "list_tools";
        args = {};
        break;
      case 6:
        tool = "org_activity";
        args = { limit: 5 };
        break;
      case 7:
        tool = "whoami";
        args = {};
        break;
      case 8:
        tool = "billing";
        args = {};
        break;
      default:
        tool = "custom_domains";
        args = { address: user.address };
    }
    const start = Date.now();
    const outcome = await user.caller.call(tool, args);
    after(outcome);
    record(user, tool, getToolContract(tool)?.service ?? "gateway", start, outcome);
  }

  async function dataStep(user: LoadUser) {
    const nonce = unique("doc");
    const origin = options.appHost(user.address);
    const start = Date.now();
    user.docAttempts++;
    let outcome: Outcome;
    try {
      const response = await fetch(`${origin}/_hatch/db/${COLLECTION}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Origin: origin },
        body: JSON.stringify({ nonce, text: `note ${nonce}` }),
        signal: AbortSignal.timeout(15_000),
      });
      // A proxy's own answer (502, 503) may have no body, or one that is not an object.
      const parsed = (await response.json().catch(() => null)) as { id?: string; error?: { message?: string } } | null;
      const body = parsed && typeof parsed === "object" ? parsed : {};
      if (response.status === 201 && body.id) {
        user.ackedDocs.push({ id: body.id, nonce, at: Date.now() });
        outcome = { kind: "ok", data: body, text: "", ms: Date.now() - start };
      } else if (response.status >= 500 && !body.error) {
        outcome = { kind: "transport", text: `HTTP ${response.status}`, ms: Date.now() - start };
      } else {
        const text = body.error?.message ?? `HTTP ${response.status}`;
        outcome = { kind: "tool_error", clear: isClearError(text), text, ms: Date.now() - start };
      }
    } catch (error) {
      const message = messageOf(error);
      outcome = /timeout|aborted/i.test(message)
        ? { kind: "hung", ms: Date.now() - start }
        : { kind: "transport", text: message, ms: Date.now() - start };
    }
    record(user, "data.insert", "apps", start, outcome);
  }

  const workers: Promise<void>[] = [];
  for (const user of users) {
    workers.push(
      (async () => {
        for (let step = 0; running && step < options.maxCallsPerWorker; step++) {
          await mcpStep(user, step);
          await Bun.sleep(options.pauseMs);
        }
      })(),
    );
    workers.push(
      (async () => {
        for (let step = 0; running && step < options.maxCallsPerWorker; step++) {
          await dataStep(user);
          await Bun.sleep(options.pauseMs);
        }
      })(),
    );
  }
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}
