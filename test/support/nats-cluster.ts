import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { collect } from "./processes.ts";
import { freePort } from "./servers.ts";

// A NATS JetStream cluster of this test's own on loopback: each node a real nats-server (Debian's 2.9 in CI) with
// cluster routes to the others. A test kills a node (the leader of a stream), starts it again, or freezes it.
// `bun run reliability --scale` runs Hatch on one too (bench/reliability/scale.ts).

export const hasNatsServer = Bun.which("nats-server") !== null;

export interface NatsNode {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  /** Its monitoring port (/healthz, /varz, /jsz). */
  readonly monitorPort: number;
  process: Bun.Subprocess;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** Starts the node again on its ports and store (after kill). */
  restart(): Promise<void>;
  /** Its /healthz answers ok: it runs and its JetStream is caught up with the cluster. */
  healthy(): Promise<boolean>;
}

export interface NatsCluster {
  readonly nodes: NatsNode[];
  /** Every node's URL, comma-separated (what NATS_URL takes). */
  readonly url: string;
  node(name: string): NatsNode;
  stop(): Promise<void>;
}

export interface NatsClusterOptions {
  /** A nats-server config file (`-c`, e.g. deploy/nats.conf); the command-line flags override what it sets. */
  config?: string;
  /** Where the nodes keep their stores (default: a temporary folder each); stop() removes them. */
  storeRoot?: string;
  /** Called with each node's process whenever it starts (e.g. to record its pid for a clean-up guard). */
  onSpawn?(name: string, child: Bun.Subprocess): void;
}

/** Starts `size` nodes and waits until JetStream has a meta leader (streams can be made). */
export async function startNatsCluster(size = 3, options: NatsClusterOptions = {}): Promise<NatsCluster> {
  const clusterName = `hatch${Math.random().toString(36).slice(2, 8)}`;
  const specs = Array.from({ length: size }, (_, i) => ({
    name: `n${i + 1}`,
    port: freePort(),
    routePort: freePort(),
    monitorPort: freePort(),
    store: options.storeRoot
      ? mkdtempSync(join(options.storeRoot, `nats-${i + 1}-`))
      : mkdtempSync(join(tmpdir(), `hatch-nats-${i + 1}-`)),
  }));
  const routes = specs.map((s) => `nats://127.0.0.1:${s.routePort}`).join(",");
  const spawn = async (spec: (typeof specs)[number]) => {
    const child = Bun.spawn(
      [
        "nats-server",
        ...(options.config ? ["-c", options.config] : []),
        "-a",
        "127.0.0.1",
        "-p",
        String(spec.port),
        "-m",
        String(spec.monitorPort),
        "-n",
        spec.name,
        "-js",
        "-sd",
        spec.store,
        "--cluster_name",
        clusterName,
        "--cluster",
        `nats://127.0.0.1:${spec.routePort}`,
        "--routes",
        routes,
      ],
      { stdout: "ignore", stderr: "pipe", stdin: "ignore" },
    );
    options.onSpawn?.(spec.name, child);
    await collect(child.stderr as ReadableStream<Uint8Array>).waitFor("Server is ready");
    return child;
  };
  const nodes: NatsNode[] = [];
  for (const spec of specs) {
    const node: NatsNode = {
      name: spec.name,
      url: `nats://127.0.0.1:${spec.port}`,
      port: spec.port,
      monitorPort: spec.monitorPort,
      process: await spawn(spec),
      async kill() {
        node.process.kill("SIGKILL");
        await node.process.exited;
      },
      async restart() {
        node.process = await spawn(spec);
      },
      async healthy() {
        const response = await fetch(`http://127.0.0.1:${spec.monitorPort}/healthz`, {
          signal: AbortSignal.timeout(2_000),
        }).catch(() => null);
        return response?.ok === true;
      },
    };
    nodes.push(node);
  }
  const url = nodes.map((n) => n.url).join(",");
  await waitForJetStream(url);
  return {
    nodes,
    url,
    node(name) {
      const found = nodes.find((n) => n.name === name);
      if (!found) throw new Error(`no node ${name}`);
      return found;
    },
    async stop() {
      for (const node of nodes) {
        if (node.process.exitCode === null && node.process.signalCode === null) node.process.kill("SIGKILL");
        await node.process.exited;
      }
      for (const spec of specs) rmSync(spec.store, { recursive: true, force: true });
    },
  };
}

/** Until the JetStream API answers (the meta group has elected a leader); the test's timeout bounds it. */
async function waitForJetStream(url: string): Promise<void> {
  const nc = await connect({ servers: url.split(",") });
  try {
    for (;;) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2_000 });
        await jsm.getAccountInfo();
        return;
      } catch {
        await Bun.sleep(200);
      }
    }
  } finally {
    await nc.close();
  }
}
