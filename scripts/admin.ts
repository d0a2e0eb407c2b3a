// `bun run admin <command>`: account and token chores for operators, scripts and tests.
//   user:create --email E --password P --name N
//   token:issue --email E [--read-only] [--ttl SECONDS]   (prints the access token alone as the last line)
// With DATABASE_URL it works on Postgres directly (any number of processes may). Else the embedded database in
// DATA_DIR, which one process at a time may open: when `bun run dev` holds it, the command runs inside dev over its
// admin socket (scripts/admin-socket.ts); when nothing does, here. Same output either way. Directly, BASE_URL/PORT
// must match the server's, since tokens carry its audience (through dev, dev's own is used).
// The arguments are checked before anything else is loaded, so that a wrong one is refused at once.
import type { CommonEnv } from "@hatch/platform";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { AdminRequest, AdminResult } from "./admin-commands.ts";

const USAGE = `Usage:
  bun run admin user:create --email E --password P --name N
  bun run admin token:issue --email E [--read-only] [--ttl SECONDS]`;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

function readRequest(): AdminRequest {
  const [command, ...rest] = process.argv.slice(2);
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        email: { type: "string" },
        password: { type: "string" },
        name: { type: "string" },
        "read-only": { type: "boolean", default: false },
        ttl: { type: "string" },
      },
      strict: true,
    }));
  } catch (error) {
    fail(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  }
  if (command !== "user:create" && command !== "token:issue") fail(USAGE);
  if (!values.email) fail(`--email is required.\n${USAGE}`);
  if (command === "user:create") {
    if (!values.password || !values.name) fail(`--password and --name are required.\n${USAGE}`);
    return { command, email: values.email, password: values.password, name: values.name };
  }
  const ttlSeconds = values.ttl ? Number(values.ttl) : undefined;
  if (ttlSeconds !== undefined && !(Number.isInteger(ttlSeconds) && ttlSeconds > 0))
    fail("--ttl takes a whole number of seconds.");
  return { command, email: values.email, readOnly: values["read-only"] ?? false, ttlSeconds };
}

/** Runs the command in this process, on the database itself. */
async function runDirect(request: AdminRequest, env: CommonEnv, dataDir: string): Promise<AdminResult> {
  const [{ createAuth, GATEWAY_MIGRATIONS, loadGatewayConfig }, platform, { runAdminCommand }, { dataDirSecret }] =
    await Promise.all([
      import("@hatch/gateway"),
      import("@hatch/platform"),
      import("./admin-commands.ts"),
      import("./data-dir.ts"),
    ]);
  const { databaseSettingsFrom, createLogger, openEmbeddedPostgres, openServiceDatabase } = platform;
  const config = loadGatewayConfig(process.env, env.HATCH_SECRET ?? dataDirSecret(dataDir));
  const pglite = env.DATABASE_URL ? undefined : await openEmbeddedPostgres(join(dataDir, "pg"));
  const database = await openServiceDatabase(
    env.DATABASE_URL
      ? { kind: "postgres", url: env.DATABASE_URL, ...databaseSettingsFrom(env, 2) }
      : { kind: "pglite", client: pglite! },
    { schema: "gateway", migrationsFolder: GATEWAY_MIGRATIONS },
  );
  const logger = createLogger({ level: "warn" });
  try {
    return await runAdminCommand(createAuth({ config, db: database.db, logger }), config.mcpUrl, request, logger);
  } finally {
    await database.close();
    await pglite?.close();
  }
}

async function run(request: AdminRequest): Promise<AdminResult> {
  const [{ CommonEnvSchema, loadConfig }, { lockDataDir }, { callAdminSocket }] = await Promise.all([
    import("@hatch/platform"),
    import("./data-dir.ts"),
    import("./admin-socket.ts"),
  ]);
  const env = loadConfig(CommonEnvSchema, process.env);
  const dataDir = resolve(env.DATA_DIR);
  if (env.DATABASE_URL) return runDirect(request, env, dataDir);
  // The lock first: free means nothing runs on this data dir (a socket a killed dev left is never asked).
  const lock = lockDataDir(dataDir, "bun run admin");
  if (lock.ok) return runDirect(request, env, dataDir);
  const call = await callAdminSocket(dataDir, request);
  if (call.answered) return call.result;
  fail(
    `${dataDir} is in use by ${lock.holder}, and ${call.reason}. Wait until it says "Hatch is running" and try again, or stop it.`,
  );
}

const result = await run(readRequest());
if (!result.ok) fail(result.message);
process.stderr.write(result.stderr);
process.stdout.write(result.stdout);
