// `bun run test`: the whole suite as `bun test` processes side by side (TEST_SHARDS, default 2), each a shard of the
// test files balanced by their durations in test/timings.json. One `bun test` left about half of this 2-core
// machine's CPU idle: most files wait on servers, browsers and child processes. Each process keeps its own migrated
// templates, so a file costs what it costs alone (`bun test --parallel` isolates every file and migrates again).
// The first shard's output is shown as it comes and each other's once the one before it ended, so files never
// interleave; then one summary (`N pass`, `N fail`, …) for the whole run. With arguments (files, a name filter,
// flags), one plain `bun test` with them. test/timings.json: `bun test --timeout 60000 --timings=test/timings.json
// --update-timings` (the whole suite in one process) writes it again; a file missing from it still runs.

export {};

const TIMEOUT = ["--timeout", "60000"];
const TIMINGS = "test/timings.json";

const args = process.argv.slice(2);
const shards = Number(process.env.TEST_SHARDS ?? 2);
if (!Number.isInteger(shards) || shards < 1 || shards > 8) {
  process.stderr.write(`TEST_SHARDS=${process.env.TEST_SHARDS} must be a whole number from 1 to 8\n`);
  process.exit(2);
}

if (args.length > 0 || shards === 1) {
  const child = Bun.spawn([process.execPath, "test", ...TIMEOUT, ...args], {
    stdio: ["inherit", "inherit", "inherit"],
  });
  process.exit(await child.exited);
}

const started = performance.now();
const timings = (await Bun.file(TIMINGS).exists()) ? [`--timings=${TIMINGS}`] : [];

interface Shard {
  /** Everything it wrote (stdout and stderr in the order read), kept for the summary and for showing later. */
  output: string[];
  /** Called with each piece once this shard is the one shown. */
  show?: (text: string) => void;
  exited: Promise<number>;
}

const running: Shard[] = Array.from({ length: shards }, (_, i) => {
  const child = Bun.spawn([process.execPath, "test", ...TIMEOUT, ...timings, `--shard=${i + 1}/${shards}`], {
    stdout: "pipe",
    stderr: "pipe",
    env: process.env,
  });
  const shard: Shard = { output: [], exited: child.exited };
  const read = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      const text = decoder.decode(chunk, { stream: true });
      shard.output.push(text);
      shard.show?.(text);
    }
  };
  shard.exited = Promise.all([read(child.stdout), read(child.stderr)]).then(() => child.exited);
  return shard;
});

const write = (text: string) => void process.stdout.write(text);
let failedShards = 0;
for (const [i, shard] of running.entries()) {
  process.stdout.write(`\n== test shard ${i + 1} of ${shards}\n`);
  for (const text of shard.output) write(text);
  shard.show = write;
  if ((await shard.exited) !== 0) failedShards++;
}

/** The counts each `bun test` prints at its end (` 12 pass`, ` 1 fail`, `Ran 40 tests across 5 files.`). */
function counts(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const match of text.matchAll(/^ *(\d+) (pass|skip|todo|fail|expect\(\) calls)$/gm)) {
    out[match[2]!] = Number(match[1]);
  }
  const ran = /^Ran (\d+) tests? across (\d+) files?/m.exec(text);
  if (ran) {
    out.tests = Number(ran[1]);
    out.files = Number(ran[2]);
  }
  return out;
}

const total: Record<string, number> = {};
for (const shard of running) {
  for (const [key, value] of Object.entries(counts(shard.output.join("")))) total[key] = (total[key] ?? 0) + value;
}
const seconds = ((performance.now() - started) / 1000).toFixed(1);
const summary = [`\n== all ${shards} test shards`];
for (const key of ["pass", "skip", "todo", "fail"]) {
  if (key === "pass" || key === "fail" || total[key]) summary.push(` ${total[key] ?? 0} ${key}`);
}
summary.push(
  `Ran ${total.tests ?? 0} tests across ${total.files ?? 0} files in ${shards} shards side by side. [${seconds}s]`,
);
// Not process.exit: into a pipe (CI's tee) the output is written as the reader takes it, and exiting drops what is
// still queued, the summary included. The process ends once it is all written.
process.stdout.write(`${summary.join("\n")}\n`);
// A shard that ended badly without a failed test (a crash, a file that did not load) still fails the run.
process.exitCode = failedShards > 0 || (total.fail ?? 0) > 0 ? 1 : 0;
