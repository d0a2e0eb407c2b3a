// `bun run admin <command>`: account and token chores for operators, scripts and tests.
//   user:create --email E --password P --name N
//   token:issue --email E [--read-only] [--ttl SECONDS]   (prints the access token alone as the last line)
// Uses DATABASE_URL when set, else the embedded database in DATA_DIR (stop `bun run dev` first: PGlite
// allows one process at a time). BASE_URL/PORT must match the server's, since tokens carry its audience.
import { AuthInputError, createAuth, GATEWAY_MIGRATIONS, loadGatewayConfig } from "@hatch/gateway";
import { CommonEnvSchema, createLogger, loadConfig, openEmbeddedPostgres, openServiceDatabase } from "@hatch/shared";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { dataDirSecret, lockDataDir } from "./data-dir.ts";

const USAGE = `Usage:
  bun run admin user:create --email E --password P --name N
  bun run admin token:issue --email E [--read-only] [--ttl SECONDS]`;

const [command, ...rest] = process.argv.slice(2);
const { values } = parseArgs({
  args: rest,
  options: {
    email: { type: "string" },
    password: { type: "string" },
    name: { type: "string" },
    "read-only": { type: "boolean", default: false },
    ttl: { type: "string" },
  },
  strict: true,
});

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

if (command !== "user:create" && command !== "token:issue") fail(USAGE);
if (!values.email) fail(`--email is required.\n${USAGE}`);

const env = loadConfig(CommonEnvSchema, process.env);
const dataDir = resolve(env.DATA_DIR);
const lock = env.DATABASE_URL ? null : lockDataDir(dataDir, "bun run admin");
if (lock && !lock.ok) {
  fail(`${dataDir} is in use by ${lock.holder}; stop it first (the embedded database allows one process at a time).`);
}
const config = loadGatewayConfig(process.env, env.HATCH_SECRET ?? dataDirSecret(dataDir));
const pglite = env.DATABASE_URL ? undefined : await openEmbeddedPostgres(join(dataDir, "pg"));
const database = await openServiceDatabase(
  env.DATABASE_URL ? { kind: "postgres", url: env.DATABASE_URL, maxConnections: 2 } : { kind: "pglite", client: pglite! },
  { schema: "gateway", migrationsFolder: GATEWAY_MIGRATIONS },
);
const auth = createAuth({ config, db: database.db, logger: createLogger({ level: "warn" }) });

try {
  if (command === "user:create") {
    if (!values.password || !values.name) fail(`--password and --name are required.\n${USAGE}`);
    // The operator vouches for the address: the user is created verified (no mail is sent).
    const user = await auth.createUser({ email: values.email, password: values.password, name: values.name }, { verified: true });
    process.stdout.write(`Created user ${user.email} (${user.id}), email verified.\n`);
  } else {
    const ttlSeconds = values.ttl ? Number(values.ttl) : undefined;
    if (ttlSeconds !== undefined && !(Number.isInteger(ttlSeconds) && ttlSeconds > 0)) fail("--ttl takes a whole number of seconds.");
    const issued = await auth.issueTokenForScript({ email: values.email, readOnly: values["read-only"], ttlSeconds });
    process.stderr.write(`Access token for ${values.email} (grant ${issued.grantId}${values["read-only"] ? ", read-only" : ""}), audience ${config.mcpUrl}:\n`);
    process.stdout.write(`${issued.accessToken}\n`);
  }
} catch (error) {
  if (error instanceof AuthInputError) fail(error.message);
  throw error;
} finally {
  await database.close();
  await pglite?.close();
}

