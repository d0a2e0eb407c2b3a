// Loaded before every test file (bunfig.toml). Quiet logs unless asked; one run id per `bun test` process.
process.env.LOG_LEVEL ??= "warn";
process.env.NODE_ENV = "test";
process.env.HATCH_TEST_RUN ??= `t${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

// Once after every test file of this process: drops what a run shares between files (template databases).
import { afterAll } from "bun:test";
afterAll(async () => (await import("./support/servers.ts")).endRun());
