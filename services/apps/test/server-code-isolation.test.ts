import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readAppLogs } from "../src/app-logs.ts";
import { ownerSeed } from "./support/collections.ts";
import { startTestHost, type TestHost } from "./support/host.ts";
import { seedApp, type SeededApp } from "./support/seed.ts";

// One app's server code must not hurt another's. App A is attacked by three anonymous request loops (paced well
// under the per-viewer rate limit) at its memory bombs and CPU bomb; app B's answers are timed alone and then during
// the attack, in the same run, and compared as a ratio of medians (B alone is timed before and after the attack). One shared worker: before isolation A and B always
// shared it (and the watchdog's kill of it took B's requests along).

const ATTACKER = `
export default {
  fetch(request) {
    switch (new URL(request.url).pathname) {
      case "/api/cpu": for (;;) {}
      case "/api/memory": { const big = new Float64Array(8e6); return new Response(String(big.length)); }
      case "/api/hog": { const a = []; for (;;) a.push("x".repeat(1 << 20) + a.length); }
      default: return new Response("fine");
    }
  },
};`;
const BYSTANDER = `
let served = 0;
export default { fetch: () => Response.json({ served: ++served }) };`;

/** B's answers are timed in blocks, alone and attacked in turn, so the machine's own bursts fall on both sides. */
const BLOCKS = 10;
const PER_BLOCK = 12;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("server code: one app's code does not hurt another's", () => {
  let t: TestHost;
  let attacker: SeededApp;

  beforeAll(async () => {
    // The data routes' rate limit is set out of the way, so only the sandbox's own defences are at work here.
    t = await startTestHost({ serverCode: { workers: 1 }, env: { DATA_REQUESTS_PER_MINUTE: "100000" } });
    attacker = await seedApp(t.ctx, {
      ...ownerSeed,
      address: "attacker",
      files: { "index.html": "x", "s.js": ATTACKER },
      config: { server: "s.js" },
    });
    await seedApp(t.ctx, {
      ...ownerSeed,
      address: "bystander",
      files: { "index.html": "x", "s.js": BYSTANDER },
      config: { server: "s.js" },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** B's answers, one after another with a short gap: milliseconds each, status and body each. */
  async function timeBystander(times: number[], answers: string[]): Promise<void> {
    for (let i = 0; i < PER_BLOCK; i++) {
      const start = performance.now();
      const answer = await t.get("bystander", "/api");
      const body = await answer.text();
      times.push(performance.now() - start);
      answers.push(`${answer.status} ${/^\{"served":\d+\}$/.test(body) ? "served" : body}`);
      await pause(30);
    }
  }

  test("while A is attacked with memory and CPU bombs, B answers every request and its median stays within 2× of B alone; A is throttled with 429 and Retry-After", async () => {
    for (let i = 0; i < 5; i++) await t.get("bystander", "/api"); // warm

    let attacking = true;
    let over = false;
    let inFlight = 0;
    const seen: string[] = [];
    const loop = async (paths: string[]) => {
      for (let i = 0; !over; i++) {
        if (!attacking) {
          await pause(20);
          continue;
        }
        const started = performance.now();
        inFlight++;
        const answer = await t.get("attacker", paths[i % paths.length]!);
        await answer.arrayBuffer();
        inFlight--;
        seen.push(`${answer.status} ${answer.headers.get("retry-after") ?? "-"}`);
        // Three loops, each at most one request per 350 ms: about 500 a minute, under the 600 a viewer may send.
        await pause(Math.max(0, 350 - (performance.now() - started)));
      }
    };
    const loops = [
      loop(["/api/memory", "/api/cpu"]),
      loop(["/api/hog", "/api/memory"]),
      loop(["/api/cpu", "/api/memory"]),
    ];
    // The attack is under way once A's code has been stopped and A is being refused (a bounded wait).
    for (let i = 0; i < 300 && !seen.some((s) => s.startsWith("429 ")); i++) await pause(100);

    const alone = { times: [] as number[], answers: [] as string[] };
    const attacked = { times: [] as number[], answers: [] as string[] };
    for (let block = 0; block < BLOCKS; block++) {
      attacking = block % 2 === 1;
      // Alone: A's requests in flight finish first (bounded).
      for (let i = 0; i < 100 && !attacking && inFlight > 0; i++) await pause(20);
      await timeBystander(attacking ? attacked.times : alone.times, attacking ? attacked.answers : alone.answers);
    }
    over = true;
    await Promise.all(loops);

    const ratio = median(attacked.times) / median(alone.times);
    process.stderr.write(
      `B median alone ${median(alone.times).toFixed(1)} ms, while A is attacked ${median(attacked.times).toFixed(1)} ms (ratio ${ratio.toFixed(2)}); A's answers: ${JSON.stringify(countOf(seen))}\n`,
    );
    const all = Array.from({ length: (BLOCKS / 2) * PER_BLOCK }, () => "200 served");
    expect(attacked.answers).toEqual(all);
    expect(alone.answers).toEqual(all);
    expect(ratio).toBeLessThanOrEqual(2);
    // A was stopped by its limits, then refused at the door once over its CPU budget.
    expect(seen.some((s) => s.startsWith("500 "))).toBe(true);
    const throttled = seen.filter((s) => s.startsWith("429 "));
    expect(throttled.length).toBeGreaterThan(0);
    expect(throttled.every((s) => Number(s.slice(4)) >= 1)).toBe(true);
    await t.host.flushLogs();
    const lines = (await readAppLogs(t.ctx.db, attacker.id, undefined, 100)).lines.map((l) => l.message);
    expect(lines.some((l) => l.includes("refused (429)") && l.includes("500 ms a second on average"))).toBe(true);
  }, 120_000);
});

function countOf(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
