import { afterAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { apiRule } from "../src/spec/server-code.ts";
import { type Database } from "@hatch/platform";
import { sql } from "drizzle-orm";
import { formsOf, redact, redactText } from "../src/apis/redact.ts";
import { secrets } from "../src/db/schema.ts";
import { sameDestination } from "../src/secrets/destinations.ts";
import { secretAad, Sealer } from "../src/secrets/sealed.ts";
import { openSecretFor } from "../src/secrets/store.ts";
import { appsDatabaseBefore, type DatabaseBefore } from "./support/migrations.ts";

// Where a secret may go (src/secrets/destinations.ts), the migration that bound the values set before destinations
// were recorded, and the forms of a secret scrubbed from what an API answers (src/apis/redact.ts).

describe("destinations", () => {
  const at = (url: string, place: Record<string, string> = { query: "key" }) => ({ url, in: place as never });

  test("the same origin and base path, however written, is the same destination", () => {
    for (const [a, b] of [
      ["https://api.example.com/v1", "https://API.example.com:443/v1/"],
      ["http://api.example.com", "http://api.example.com:80/"],
    ] as const)
      expect([a, b, sameDestination(at(a), at(b))]).toEqual([a, b, true]);
    expect(
      sameDestination(
        at("https://a.example", { header: "X-Api-Key" }),
        at("https://a.example", { header: "x-api-key", prefix: "" }),
      ),
    ).toBe(true);
  });

  test("another host, port, scheme, base path or placement is another destination", () => {
    const base = at("https://api.example.com/v1");
    for (const other of [
      at("https://api.example.org/v1"),
      at("https://api.example.com.evil.example/v1"),
      at("https://api.example.com:8443/v1"),
      at("http://api.example.com/v1"),
      at("https://api.example.com/v2"),
      at("https://api.example.com/v1/echo"),
      at("https://api.example.com"),
      at("https://api.example.com/v1", { query: "appid" }),
      at("https://api.example.com/v1", { header: "key" }),
    ])
      expect([other, sameDestination(base, other)]).toEqual([other, false]);
    expect(
      sameDestination(
        at("https://a.example", { header: "Authorization", prefix: "Bearer " }),
        at("https://a.example", { header: "Authorization", prefix: "Token " }),
      ),
    ).toBe(false);
  });
});

describe("redaction", () => {
  const secret = "sk-0123456789abcdef";

  test("base64 and base64url of the secret inside a longer base64 text, at each byte offset, are scrubbed", () => {
    for (const before of ["", "a", "ab", "abc", "user:"]) {
      for (const after of ["", "x", "xy", ":tail"]) {
        const bytes = Buffer.from(`${before}${secret}${after}`);
        for (const encoded of [bytes.toString("base64"), bytes.toString("base64url")]) {
          const out = redactText(`token=${encoded};`, formsOf(secret));
          expect([before, after, out.includes("[secret]")]).toEqual([before, after, true]);
          // What is left is the neighbours' encoding and at most the two characters at each edge that mix bits.
          const neighbours = Math.ceil(((before.length + after.length) * 4) / 3);
          expect(out.replace("[secret]", "").length).toBeLessThanOrEqual("token=;".length + neighbours + 4);
        }
      }
    }
  });

  test("bodies: each form becomes [secret]; text without the secret is left as it was", () => {
    const body = Buffer.from(
      [secret, Buffer.from(secret).toString("hex").toUpperCase(), encodeURIComponent("é/" + secret)].join(" "),
    );
    expect(Buffer.from(redact(body, formsOf(secret))).toString()).toBe(
      `[secret] [secret] ${encodeURIComponent("é/")}[secret]`,
    );
    const plain = Buffer.from("nothing to see here, abcdef0123456789");
    expect(Buffer.from(redact(plain, formsOf(secret))).toString()).toBe(plain.toString());
  });

  test("a short value (set before the 8-character minimum) is still scrubbed as it is, but no short derived form is", () => {
    expect(formsOf("abc")).toEqual(["abc"]);
    expect(redactText("xabcx YWJj 616263", formsOf("abc"))).toBe("x[secret]x YWJj 616263");
  });
});

describe("the migration that records destinations", () => {
  let migrated: DatabaseBefore | undefined;
  afterAll(async () => {
    await migrated?.close();
  });

  test("values set before it are bound to what the app's current version declares, so calls go on working", async () => {
    // The migrations as they were before 0006, then all of them, on one database.
    migrated = await appsDatabaseBefore("0006_secret_destinations");
    const { old } = migrated;

    const sealer = new Sealer([{ id: "k1", key: randomBytes(32) }]);
    const weather = { url: "https://API.weather.example:443/v1/", secret: "WEATHER_KEY", in: { query: "appid" } };
    const forecast = { url: "https://forecast.example", secret: "WEATHER_KEY" };
    const moved = { url: "https://old.example/v1", secret: "WEATHER_KEY", in: { query: "appid" } };
    await seed(old, "app_one", 2, [{ apis: { weather: moved } }, { apis: { weather, forecast } }]);
    await seed(old, "app_two", null, []);
    for (const [appId, name] of [
      ["app_one", "WEATHER_KEY"],
      ["app_one", "UNUSED_KEY"],
      ["app_two", "WEATHER_KEY"],
    ] as const) {
      const sealed = sealer.seal(`value-of-${name}`, secretAad(appId, name));
      await old.execute(sql`insert into apps.secrets (app_id, name, key_id, sealed, updated_by, updated_by_email)
        values (${appId}, ${name}, ${sealed.keyId}, ${sealed.sealed}, 'usr_1', 'owner@example.com')`);
    }

    const db = await migrated.upgrade();
    const rows = await db.select().from(secrets).orderBy(secrets.appId, secrets.name);
    expect(rows.map((row) => [row.appId, row.name, row.destinations])).toEqual([
      ["app_one", "UNUSED_KEY", []],
      [
        "app_one",
        "WEATHER_KEY",
        [
          {
            api: "forecast",
            url: "https://forecast.example",
            in: { header: "Authorization", prefix: "Bearer " },
          },
          { api: "weather", url: "https://API.weather.example:443/v1", in: { query: "appid" } },
        ],
      ],
      ["app_two", "WEATHER_KEY", []],
    ]);

    // The host sends the value to both current destinations (as the host reads them) and to nothing else.
    const apps = { db, sealer };
    for (const api of [weather, forecast])
      expect(await openSecretFor(apps, "app_one", "WEATHER_KEY", apiRule(api))).toEqual({
        state: "set",
        value: "value-of-WEATHER_KEY",
      });
    expect((await openSecretFor(apps, "app_one", "WEATHER_KEY", apiRule(moved))).state).toBe("unconfirmed");
    expect((await openSecretFor(apps, "app_two", "WEATHER_KEY", apiRule(moved))).state).toBe("unconfirmed");
  }, 60_000);
});

/** An app with its versions (configs in order; `current` is the current one's number). */
/** Rows as the schema stood before 0006, in plain SQL (the drizzle tables name columns later migrations added). */
async function seed(db: Database, id: string, current: number | null, configs: Record<string, unknown>[]) {
  const address = id.replace("_", "-");
  await db.execute(sql`insert into apps.addresses (address, app_id) values (${address}, ${id})`);
  await db.execute(sql`insert into apps.apps (id, address, name, account_id, owner_id, owner_email, owner_name,
    visibility, current_version, last_version)
    values (${id}, ${address}, ${id}, 'acc_1', 'usr_1', 'owner@example.com', 'Owner', 'private', ${current},
    ${configs.length})`);
  for (const [i, config] of configs.entries())
    await db.execute(sql`insert into apps.versions (app_id, number, published_by, publisher_email, file_count,
      total_bytes, config)
      values (${id}, ${i + 1}, 'usr_1', 'owner@example.com', 1, 1, ${JSON.stringify(config)}::jsonb)`);
}
