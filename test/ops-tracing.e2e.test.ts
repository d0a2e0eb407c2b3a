import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTracing, type Tracing } from "@hatch/platform";
import { startTestHatch, type TestHatch } from "./support/hatch.ts";
import { connectClient, userWithToken } from "./support/mcp.ts";
import { MODES } from "./support/servers.ts";

// OpenTelemetry end to end: a local OTLP/HTTP receiver (JSON, as the exporter sends it) collects what Hatch exports,
// and one tool call's trace must link the MCP request → tools/call → bus send → the service's handler → its SQL.

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
}
interface OtlpExport {
  resourceSpans: {
    resource: { attributes: { key: string; value: OtlpValue }[] };
    scopeSpans: { spans: OtlpSpan[] }[];
  }[];
}

const SERVER = 2;
const CLIENT = 3;

function attr(span: OtlpSpan, key: string): string | undefined {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue !== undefined ? String(value.intValue) : undefined);
}

for (const mode of MODES) {
  describe(`traces cross the gateway, the bus, a service and its SQL (${mode})`, () => {
    let hatch: TestHatch;
    let tracing: Tracing;
    let receiver: ReturnType<typeof Bun.serve>;
    const exports: { contentType: string; body: OtlpExport }[] = [];
    const spans = () =>
      exports.flatMap((e) => e.body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));

    beforeAll(async () => {
      receiver = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        async fetch(request) {
          if (new URL(request.url).pathname !== "/v1/traces" || request.method !== "POST")
            return new Response("not found", { status: 404 });
          exports.push({
            contentType: request.headers.get("content-type") ?? "",
            body: (await request.json()) as OtlpExport,
          });
          return Response.json({});
        },
      });
      tracing = startTracing({
        serviceName: "hatch-test",
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}/` },
      });
      hatch = await startTestHatch(mode);
    }, 60_000);
    afterAll(async () => {
      await hatch?.stop();
      await tracing?.shutdown();
      await receiver?.stop(true);
    });

    test("one trace links the MCP request, the tool call, the bus request, the orgs handler and its SQL", async () => {
      expect(tracing.enabled).toBe(true);
      const user = await userWithToken(hatch);
      const traceId = "5bf92f3577b34da6a3ce929d0e0e4737";
      const client = await connectClient(hatch, user.accessToken, undefined, {
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      });
      const result = await client.callTool({ name: "whoami", arguments: {} });
      expect(result.isError).toBeFalsy();
      await client.close();
      await tracing.flush();

      expect(exports.length).toBeGreaterThan(0);
      expect(exports[0]!.contentType).toContain("application/json");
      const resource = exports[0]!.body.resourceSpans[0]!.resource.attributes.find((a) => a.key === "service.name")
        ?.value.stringValue;
      expect(resource).toBe("hatch-test");

      const mine = spans().filter((s) => s.traceId === traceId);
      const byId = new Map(mine.map((s) => [s.spanId, s]));
      const parentOf = (s: OtlpSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);

      const call = mine.find((s) => s.name === "tools/call whoami");
      expect(call).toBeDefined();
      const request = parentOf(call!);
      expect(request).toMatchObject({ name: "POST /mcp", kind: SERVER, parentSpanId: "00f067aa0ba902b7" });
      expect(attr(request!, "http.response.status_code")).toBe("200");

      const send = mine.find((s) => s.name === "send tools.orgs.whoami");
      expect(send).toMatchObject({ kind: CLIENT, parentSpanId: call!.spanId });
      const handler = mine.find((s) => s.name === "process tools.orgs.whoami");
      expect(handler).toMatchObject({ kind: SERVER, parentSpanId: send!.spanId });
      expect(attr(handler!, "hatch.outcome")).toBe("ok");

      const sql = mine.filter((s) => s.parentSpanId === handler!.spanId && attr(s, "db.system.name") === "postgresql");
      expect(sql.length).toBeGreaterThan(0);
      for (const q of sql) {
        expect(q.kind).toBe(CLIENT);
        const text = attr(q, "db.query.text") ?? "";
        expect(text).toMatch(/\$1|select|insert|update/i);
        // The statement only: the values it ran with (the user's email and id) never reach a span.
        expect(text).not.toContain(user.email);
        expect(text).not.toContain(user.id);
      }
      expect(JSON.stringify(exports)).not.toContain(user.accessToken);
    });

    test("a call without a traceparent starts its own trace, still linked end to end", async () => {
      const user = await userWithToken(hatch);
      const client = await connectClient(hatch, user.accessToken);
      await client.callTool({ name: "whoami", arguments: {} });
      await client.close();
      await tracing.flush();
      const handlers = spans().filter((s) => s.name === "process tools.orgs.whoami");
      const last = handlers.at(-1)!;
      const trace = spans().filter((s) => s.traceId === last.traceId);
      const root = trace.find((s) => s.name === "POST /mcp" && !s.parentSpanId);
      expect(root).toBeDefined();
      expect(trace.some((s) => s.name === "tools/call whoami")).toBe(true);
    });
  });
}
