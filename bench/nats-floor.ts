// What one hop of the cluster costs at 1 client, apart from Hatch's own work: `bun bench/nats-floor.ts`.
// Sequential round trips of a whoami-sized message (700 bytes) between two Bun processes, three ways, alternating:
// - tcp: a direct TCP ping-pong (the floor of two processes waking each other);
// - nats: through nats-server with a minimal hand-written protocol client (PUB/SUB, no nats.js): nats-server's share;
// - bus: through nats-server with Hatch's NATS bus (nats.js, headers as a call carries them): what a call pays.
// Prints p50 and the requester's CPU µs per round trip for each. Needs the local NATS (BENCH_NATS_URL). `bun run
// bench` runs one short round of it beside the whoami figures (measureFloors): the added p50 at 1 client is read
// against it. bench/README.md ("Round 5") says what it showed.
import { createNatsBus } from "@hatch/platform";
import { randomBytes } from "node:crypto";

const NATS_URL = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
const WARMUP = 500;
const SIZE = 700;
const HEADERS = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "hatch-request-id": "r-1" };

export type Way = "tcp" | "nats" | "bus";
/** One way's figures: p50 in µs and the requester's CPU µs per round trip. */
export interface Floor {
  p50: number;
  cpu: number;
}
export type Floors = Record<Way, Floor[]>;
const WAYS: readonly Way[] = ["tcp", "nats", "bus"];

/** host:port of the NATS server. */
function natsAddress(): { hostname: string; port: number } {
  const url = new URL(NATS_URL.split(",")[0]!);
  return { hostname: url.hostname, port: Number(url.port || 4222) };
}

/** A minimal NATS protocol connection: calls `onMsg(reply, body)` for each MSG. */
async function rawNats(onMsg: (reply: string, body: Buffer) => void) {
  let buffer = Buffer.alloc(0);
  const socket = await Bun.connect({
    ...natsAddress(),
    socket: {
      data(s, chunk) {
        buffer = Buffer.concat([buffer, chunk]);
        for (;;) {
          const end = buffer.indexOf("\r\n");
          if (end < 0) return;
          const line = buffer.subarray(0, end).toString();
          if (!line.startsWith("MSG ")) {
            if (line === "PING") s.write("PONG\r\n");
            buffer = buffer.subarray(end + 2);
            continue;
          }
          const parts = line.split(" ");
          const size = Number(parts.at(-1));
          if (buffer.length < end + 2 + size + 2) return;
          onMsg(parts.length === 5 ? parts[3]! : "", buffer.subarray(end + 2, end + 2 + size));
          buffer = buffer.subarray(end + 2 + size + 2);
        }
      },
    },
  });
  socket.write('CONNECT {"verbose":false,"pedantic":false}\r\n');
  return socket;
}

async function serve(which: Way, prefix: string): Promise<void> {
  if (which === "tcp") {
    const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: (s, d) => void s.write(d) } });
    process.stdout.write(`READY ${server.port}\n`);
  } else if (which === "nats") {
    const socket = await rawNats((reply, body) => {
      socket.write(`PUB ${reply} ${body.length}\r\n`);
      socket.write(Buffer.concat([body, Buffer.from("\r\n")]));
    });
    socket.write(`SUB ${prefix}.floor q 1\r\nPING\r\n`);
    await Bun.sleep(200);
    process.stdout.write("READY 0\n");
  } else {
    const bus = await createNatsBus({ url: NATS_URL, prefix });
    bus.subscribe("floor", (msg) => ({ data: msg.data }), { queue: "q" });
    await bus.flush();
    process.stdout.write("READY 0\n");
  }
  await new Promise(() => {});
}

/** Sequential round trips: p50 in µs and the requester's CPU µs per round trip. */
async function measure(roundTrip: () => Promise<void>, n: number): Promise<Floor> {
  for (let i = 0; i < WARMUP; i++) await roundTrip();
  const latencies: number[] = [];
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await roundTrip();
    latencies.push(performance.now() - started);
  }
  const used = process.cpuUsage(before);
  latencies.sort((a, b) => a - b);
  return { p50: Math.round(latencies[n >> 1]! * 1000), cpu: Math.round((used.user + used.system) / n) };
}

/** One way's round trip to the server at `target`, and how to let go of its connection. */
interface Connection {
  roundTrip(): Promise<void>;
  close(): unknown;
}

async function open(which: Way, target: string): Promise<Connection> {
  const payload = randomBytes(SIZE);
  let answered: () => void = () => {};
  const answer = (send: () => void) => new Promise<void>((resolve) => void ((answered = resolve), send()));
  if (which === "tcp") {
    let got = 0;
    const socket = await Bun.connect({
      hostname: "127.0.0.1",
      port: Number(target),
      socket: {
        data(_s, chunk) {
          got += chunk.length;
          if (got >= SIZE) {
            got = 0;
            answered();
          }
        },
      },
    });
    return { roundTrip: () => answer(() => socket.write(payload)), close: () => socket.end() };
  }
  if (which === "nats") {
    const socket = await rawNats(() => answered());
    socket.write(`SUB ${target}.inbox.* 1\r\n`);
    await Bun.sleep(100);
    let sent = 0;
    const frame = (id: number) =>
      Buffer.concat([
        Buffer.from(`PUB ${target}.floor ${target}.inbox.${id} ${SIZE}\r\n`),
        payload,
        Buffer.from("\r\n"),
      ]);
    return { roundTrip: () => answer(() => socket.write(frame(++sent))), close: () => socket.end() };
  }
  const bus = await createNatsBus({ url: NATS_URL, prefix: target });
  return {
    roundTrip: async () => void (await bus.request("floor", payload, { timeoutMs: 5_000, headers: HEADERS })),
    close: () => bus.drain(),
  };
}

async function drive(which: Way, target: string, n: number): Promise<Floor> {
  const way = await open(which, target);
  try {
    return await measure(() => way.roundTrip(), n);
  } finally {
    await way.close();
  }
}

/** `rounds` rounds of `n` sequential round trips each way, the ways alternating; each way's figures in round order. */
export async function measureFloors(n: number, rounds: number): Promise<Floors> {
  const results: Floors = { tcp: [], nats: [], bus: [] };
  for (let round = 0; round < rounds; round++) {
    for (const which of WAYS) {
      const prefix = `floor_${randomBytes(4).toString("hex")}`;
      const child = Bun.spawn([process.execPath, import.meta.path, "serve", which, prefix], { stdout: "pipe" });
      try {
        const reader = child.stdout.getReader();
        let text = "";
        while (!text.includes("\n")) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`nats-floor: the ${which} server exited before it was ready`);
          text += new TextDecoder().decode(value);
        }
        reader.releaseLock();
        results[which].push(await drive(which, which === "tcp" ? text.split(" ")[1]!.trim() : prefix, n));
      } finally {
        child.kill();
        await child.exited;
      }
    }
  }
  return results;
}

async function main(): Promise<void> {
  const n = Number(process.env.N ?? 3000);
  const results = await measureFloors(n, Number(process.env.ROUNDS ?? 3));
  const load = (
    await Bun.file("/proc/loadavg")
      .text()
      .catch(() => "?")
  ).split(" ")[0];
  process.stdout.write(
    `sequential ${SIZE}-byte round trips, ${n} a round (load average ${load}); requester CPU per round trip\n`,
  );
  for (const which of WAYS)
    process.stdout.write(
      `${which.padEnd(5)} ${results[which].map((f) => `p50 ${f.p50} µs, cpu ${f.cpu} µs`).join(" | ")}\n`,
    );
  process.exit(0);
}

if (import.meta.main) {
  const [role, way, arg] = process.argv.slice(2);
  if (role === "serve") await serve(way as Way, arg ?? "floor");
  else await main();
}
