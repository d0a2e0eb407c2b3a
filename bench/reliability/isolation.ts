// The isolation matrix: a first user (in an organization, with a private app shared with one person, a public app
// holding a document, and a pending invitation) and a second user, a stranger who confirms whatever is asked. The
// stranger calls every tool with the first user's app addresses, invitation id and emails (every action and option
// of each tool), and no answer may contain anything of the first user's that the stranger did not send itself.
import { listTools, validValue, type JsonSchema } from "./fuzz.ts";
import { COLLECTION, SERVICE_JSON } from "./load.ts";
import type { Caller } from "./mcp.ts";

export interface IsolationReport {
  tools: number;
  calls: number;
  /** `tool args: which secret appeared`. */
  leaks: string[];
}

export interface IsolationOptions {
  newUser(label: string, options?: { confirm?: boolean }): Promise<{ email: string; token: string; caller: Caller }>;
  must(caller: Caller, tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>>;
  appHost(address: string): string;
  runId: string;
  mcpUrl: string;
}

/** Fields that name something of another user's: filled with the first user's values. */
const TARGETED = ["address", "app", "person", "email", "emails", "add", "remove", "appsRecipient", "invitationId"];

export async function runIsolation(options: IsolationOptions): Promise<IsolationReport> {
  const secret = `zq${options.runId}`;
  const owner = await options.newUser("victim");
  const orgName = `Victim Org ${secret}`;
  await options.must(owner.caller, "org_setup", { action: "create", name: orgName });
  const files = (title: string) => [
    { path: "index.html", content: `<!doctype html><title>${title}</title>`, encoding: "utf8" },
    { path: "service.json", content: SERVICE_JSON, encoding: "utf8" },
  ];
  const privateName = `Hidden Plans ${secret}`;
  const publicName = `Open Board ${secret}`;
  const privateApp = await options.must(owner.caller, "publish", {
    name: privateName,
    visibility: "people",
    files: files(privateName),
  });
  const publicApp = await options.must(owner.caller, "publish", {
    name: publicName,
    visibility: "public",
    files: files(publicName),
  });
  const friend = `friend-${secret}@reliability.test`;
  await options.must(owner.caller, "share", { address: privateApp.address, add: [friend] });
  // The invitee has an account: the invitation's id is theirs to read (org lists the invitations waiting for them).
  const inviteeUser = await options.newUser("invitee");
  const invitee = inviteeUser.email;
  await options.must(owner.caller, "org_invite", { emails: [invitee], role: "member" });
  const waiting = (await options.must(inviteeUser.caller, "org", {})) as {
    invitationsForMe?: { invitationId: string }[];
  };
  const invitationId = waiting.invitationsForMe?.[0]?.invitationId;
  if (!invitationId) throw new Error("isolation setup: the invitation is not listed for its invitee");
  const dataValue = `datavalue-${secret}`;
  const origin = options.appHost(publicApp.address as string);
  const posted = await fetch(`${origin}/_hatch/db/${COLLECTION}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Origin: origin },
    body: JSON.stringify({ text: dataValue }),
  });
  if (posted.status !== 201) throw new Error(`isolation setup: adding a document answered ${posted.status}`);

  // What must never reach the stranger (unless the stranger itself sent it in that call).
  const secrets = [
    privateName,
    publicName,
    orgName,
    owner.email,
    friend,
    invitee,
    invitationId,
    dataValue,
    privateApp.address as string,
    secret,
  ];

  const stranger = await options.newUser("stranger");
  const tools = await listTools({ mcpUrl: options.mcpUrl, token: stranger.token });
  const report: IsolationReport = { tools: tools.length, calls: 0, leaks: [] };
  for (const tool of tools) {
    for (const args of argumentSets(tool.inputSchema, {
      address: [privateApp.address as string, publicApp.address as string],
      email: [owner.email, invitee, friend],
      invitationId,
    })) {
      report.calls++;
      const outcome = await stranger.caller.call(tool.name, args);
      const sent = JSON.stringify(args).toLowerCase();
      const answer = (
        outcome.kind === "ok"
          ? `${outcome.text}\n${JSON.stringify(outcome.data)}`
          : outcome.kind === "hung"
            ? ""
            : outcome.text
      ).toLowerCase();
      for (const s of secrets) {
        const needle = s.toLowerCase();
        if (!sent.includes(needle) && answer.includes(needle))
          report.leaks.push(`${tool.name} ${JSON.stringify(args).slice(0, 160)}: the answer contains "${s}"`);
      }
    }
  }
  return report;
}

/** Every action/option variant of a tool, with each targeted field set to each of the first user's values. */
function argumentSets(
  schema: JsonSchema,
  target: { address: string[]; email: string[]; invitationId: string },
): Record<string, unknown>[] {
  const props = schema.properties ?? {};
  const filler = { address: target.address[0]!, email: target.email[0]! };
  const base: Record<string, unknown> = {};
  for (const key of schema.required ?? []) base[key] = validValue(key, props[key] ?? {}, filler);
  if ("invitationId" in base) base.invitationId = target.invitationId;
  // Variants: each enum value of a mode-like field (action, include, ...), each as its own call.
  const modes: Record<string, unknown>[] = [{}];
  for (const [key, prop] of Object.entries(props)) {
    if (prop.enum && ["action", "include", "visibility", "role"].includes(key))
      for (const value of prop.enum) modes.push({ [key]: value });
  }
  const sets: Record<string, unknown>[] = [];
  const targeted = Object.keys(props).filter((k) => TARGETED.includes(k));
  const values = (key: string, prop: JsonSchema): unknown[] => {
    if (key === "invitationId") return [target.invitationId];
    if (key === "address" || key === "app") return target.address;
    if (prop.type === "array") return target.email.map((e) => [e]);
    return target.email;
  };
  for (const mode of modes) {
    if (targeted.length === 0) {
      sets.push({ ...base, ...mode });
      continue;
    }
    for (const key of targeted)
      for (const value of values(key, props[key]!)) sets.push({ ...base, ...mode, [key]: value });
  }
  // One set of a kind is enough.
  return [...new Map(sets.map((s) => [JSON.stringify(s), s])).values()];
}
