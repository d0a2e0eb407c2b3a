// What one hop of the cluster costs at 1 client, apart from Hatch's own work: `bun bench/nats-floor.ts`.
// Sequential round trips of a whoami-sized message (700 bytes) between two Bun processes, three ways, alternating:
// - tcp: a direct TCP ping-pong (the floor of two processes waking each other);
// - nats: through nats-server with a minimal hand-written protocol client (PUB/SUB, no nats.js): nats-server's share;
// - bus: through nats-server with Hatch's NATS bus (nats.js, headers as a call carries them): what a call pays.
// Prints p50 and the requester's CPU µs per round trip for each. Needs the local NATS (BENCH_NATS_URL). Not part of
// `bun run bench`; bench/README.md ("Round 5") says what it showed.
import { createNatsBus } from "@hatch/platform";
import { randomBytes } from "node:crypto";

const NATS_URL = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
const N = Number(process.env.N ?? 3000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WARMUP = 500;
const SIZE = 700;
const HEADERS = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "hatch-request-id": "r-1" };

type Way = "tcp" | "nats" | "bus";
const [role, way, arg] = process.argv.slice(2);

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
async function measure(roundTrip: () => Promise<void>): Promise<{ p50: number; cpu: number }> {
  for (let i = 0; i < WARMUP; i++) await roundTrip();
  const latencies: number[] = [];
  const before = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const started = performance.now();
    await roundTrip();
    latencies.push(performance.now() - started);
  }
  const used = process.cpuUsage(before);
  latencies.sort((a, b) => a - b);
  return { p50: Math.round(latencies[N >> 1]! * 1000), cpu: Math.round((used.user + used.system) / N) };
}

async function drive(which: Way, target: string): Promise<{ p50: number; cpu: number }> {
  const payload = randomBytes(SIZE);
  let answered: () => void = () => {};
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
    return measure(() => new Promise<void>((resolve) => void ((answered = resolve), socket.write(payload))));
  }
  if (which === "nats") {
    const socket = await rawNats(() => answered());
    socket.write(`SUB ${target}.inbox.* 1\r\n`);
    await Bun.sleep(100);
    let n = 0;
    const frame = (id: number) =>
      Buffer.concat([
        Buffer.from(`PUB ${target}.floor ${target}.inbox.${id} ${SIZE}\r\n`),
        payload,
        Buffer.from("\r\n"),
      ]);
    return measure(() => new Promise<void>((resolve) => void ((answered = resolve), socket.write(frame(++n)))));
  }
  const bus = await createNatsBus({ url: NATS_URL, prefix: target });
  return measure(async () => void (await bus.request("floor", payload, { timeoutMs: 5_000, headers: HEADERS })));
}

async function main(): Promise<void> {
  const results: Record<Way, string[]> = { tcp: [], nats: [], bus: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const which of ["tcp", "nats", "bus"] as const) {
      const prefix = `floor_${randomBytes(4).toString("hex")}`;
      const child = Bun.spawn([process.execPath, import.meta.path, "serve", which, prefix], { stdout: "pipe" });
      const reader = child.stdout.getReader();
      let text = "";
      while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
      const port = text.split(" ")[1]!.trim();
      try {
        const { p50, cpu } = await drive(which, which === "tcp" ? port : prefix);
        results[which].push(`p50 ${p50} µs, cpu ${cpu} µs`);
      } finally {
        child.kill();
      }
    }
  }
  const load = (
    await Bun.file("/proc/loadavg")
      .text()
      .catch(() => "?")
  ).split(" ")[0];
  process.stdout.write(
    `sequential ${SIZE}-byte round trips, ${N} a round (load average ${load}); requester CPU per round trip\n`,
  );
  for (const [which, figures] of Object.entries(results))
    process.stdout.write(`${which.padEnd(5)} ${figures.join(" | ")}\n`);
  process.exit(0);
}

if (role === "serve") await serve(way as Way, arg ?? "floor");
else await main();
