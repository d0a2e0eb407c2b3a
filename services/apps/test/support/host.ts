import { connect } from "node:net";
import { eventStreamFor } from "@hatch/platform";
import { newEvent } from "@hatch/contracts";
import type { AppsContext } from "../../src/context.ts";
import { listenAppHost, startAppHost, type AppHost, type AppHostOptions } from "../../src/host/server.ts";
import { openTestContext, type TestContext } from "./context.ts";
import { StandInGateway } from "./stand-in-gateway.ts";

export interface TestHost extends TestContext {
  host: AppHost;
  port: number;
  /** http://<address>.localhost:<port> */
  origin(address: string): string;
  /** Answers the app host's viewer checks on the test's bus, as the gateway would. */
  gateway: StandInGateway;
  /** A real HTTP request to an app's origin; redirects are not followed. */
  get(address: string, path: string, init?: RequestInit): Promise<Response>;
}

/** An app host on a free port over a fresh test context; apps open at http://<address>.localhost:<port>. */
export async function startTestHost(
  options: AppHostOptions & {
    gatewayUrl?: string;
    env?: Record<string, string>;
    logWrite?: (line: string) => void;
  } = {},
): Promise<TestHost> {
  const test = await openTestContext({ gatewayUrl: options.gatewayUrl, env: options.env, logWrite: options.logWrite });
  const gateway = new StandInGateway(test.ctx.bus, test.ctx.keys.viewer);
  // The socket first, so the context has its app origins before the host starts (as startAppsService does).
  const listener = listenAppHost(test.ctx.config);
  test.ctx.config = { ...test.ctx.config, appsDomain: `localhost:${listener.port}` };
  const host = startAppHost(test.ctx, { ...options, listener });
  const origin = (address: string) => `http://${address}.localhost:${host.port}`;
  return {
    ...test,
    host,
    gateway,
    port: host.port,
    origin,
    get: (address, path, init = {}) => fetch(`${origin(address)}${path}`, { redirect: "manual", ...init }),
    async close() {
      await host.stop();
      gateway.down();
      await test.close();
    },
  };
}

/**
 * Sends a request line and Host line exactly as written (fetch would normalise `..` and percent-encoded dots, and
 * never sends an odd or missing Host), and returns the status code of the answer. `host: null` sends no Host line.
 */
export function rawStatus(port: number, host: string | null, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const hostLine = host === null ? "" : `Host: ${host}\r\n`;
    const socket = connect(port, "127.0.0.1", () =>
      socket.write(`GET ${target} HTTP/1.1\r\n${hostLine}Connection: close\r\n\r\n`),
    );
    let data = "";
    socket.on("data", (chunk) => (data += chunk.toString("latin1")));
    socket.on("error", reject);
    socket.on("close", () => {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(data);
      if (match) resolve(Number(match[1]));
      else reject(new Error(`no HTTP answer: ${data.slice(0, 200)}`));
    });
  });
}

/**
 * An apps event about `address` on the test's bus, as the outbox relay of any apps copy publishes it after a change
 * (tests that change rows directly use it to say so): every app host drops its cached copy of the app.
 */
export async function announceAppChange(ctx: Pick<AppsContext, "bus">, address: string): Promise<void> {
  await eventStreamFor(ctx.bus).publish(
    newEvent("apps", null, { entity: "app", verb: "changed", summary: `${address} changed`, app: address }),
  );
}
