import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import type { Registrant } from "../src/db/schema.ts";
import { createNamecomRegistrar } from "../src/registrar/namecom.ts";
import { RegistrarUnavailable, type Registrar, type ZoneRecord } from "../src/registrar/types.ts";
import { FakeNamecom } from "../../../test/support/fake-namecom.ts";

// The Name.com adapter against a local server speaking Name.com's v4 wire format (test/support/fake-namecom.ts): the
// same requests production sends, only the base URL differs.

const REGISTRANT: Registrant = {
  name: "Ada Lovelace",
  email: "ada@example.com",
  address: "1 Analytical Way",
  city: "London",
  postalCode: "N1 9GU",
  country: "GB",
  phone: "+44.2071234567",
};
const RECORDS: ZoneRecord[] = [
  { type: "A", host: "", value: "203.0.113.10" },
  { type: "CNAME", host: "www", value: "edge.hatch.example" },
];

describe("Name.com registrar adapter", () => {
  let fake: FakeNamecom;
  let registrar: Registrar;

  beforeAll(() => {
    fake = new FakeNamecom({ username: "hatch", token: "tok-123" });
    registrar = createNamecomRegistrar({ apiUrl: fake.url, username: "hatch", token: "tok-123", timeoutMs: 5_000 });
  });
  afterAll(() => fake?.stop());
  beforeEach(() => {
    fake.failNext = 0;
    fake.requests.length = 0;
  });

  test("availability: prices in cents, premium, and names that cannot be bought", async () => {
    fake.offer("ada-notes.com", { purchasable: true, purchasePrice: 12.99, renewalPrice: 15.99 });
    fake.offer("ai.dev", { purchasable: true, premium: true, purchasePrice: 2499.5, renewalPrice: 2499.5 });
    const offers = await registrar.check(["ada-notes.com", "ai.dev", "google.com"]);
    expect(offers).toEqual([
      { domain: "ada-notes.com", available: true, premium: false, firstYearMinor: 1299, renewalMinor: 1599 },
      { domain: "ai.dev", available: true, premium: true, firstYearMinor: 249950, renewalMinor: 249950 },
      { domain: "google.com", available: false, premium: false, firstYearMinor: null, renewalMinor: null },
    ]);
    expect(fake.requests).toEqual([
      {
        method: "POST",
        path: "/v4/domains:checkAvailability",
        body: { domainNames: ["ada-notes.com", "ai.dev", "google.com"] },
      },
    ]);
  });

  test("register with the confirmed price, its records, status; a repeated register registers nothing twice", async () => {
    fake.offer("ada-register.com", { purchasable: true, purchasePrice: 12.99, renewalPrice: 15.99 });
    const state = await registrar.register({
      domain: "ada-register.com",
      priceMinor: 1299,
      registrant: REGISTRANT,
      records: RECORDS,
    });
    expect(state.state).toBe("registered");
    if (state.state !== "registered") throw new Error("not registered");
    expect(state.ref).toBe("ada-register.com");
    expect(state.renewsAt.getTime()).toBeGreaterThan(Date.now() + 360 * 24 * 3600_000);
    const create = fake.requests.find((r) => r.method === "POST" && r.path === "/v4/domains")!;
    expect(create.body).toMatchObject({
      domain: {
        domainName: "ada-register.com",
        contacts: {
          registrant: {
            firstName: "Ada",
            lastName: "Lovelace",
            address1: "1 Analytical Way",
            city: "London",
            zip: "N1 9GU",
            country: "GB",
            email: "ada@example.com",
            phone: "+44.2071234567",
          },
        },
      },
      purchasePrice: 12.99,
      purchaseType: "registration",
      years: 1,
    });
    expect(fake.records.get("ada-register.com")!.map((r) => [r.type, r.host, r.answer])).toEqual([
      ["A", "", "203.0.113.10"],
      ["CNAME", "www", "edge.hatch.example"],
    ]);
    expect(await registrar.recordsLive("ada-register.com", RECORDS)).toBe(true);
    expect(await registrar.status("ada-register.com")).toEqual(state);

    const again = await registrar.register({
      domain: "ada-register.com",
      priceMinor: 1299,
      registrant: REGISTRANT,
      records: RECORDS,
    });
    expect(again).toEqual(state);
    expect(fake.requests.filter((r) => r.method === "POST" && r.path === "/v4/domains")).toHaveLength(1);
    expect(fake.records.get("ada-register.com")).toHaveLength(2);
  });

  test("records missing at the registrar are not live, and a repeated register adds only those", async () => {
    fake.offer("ada-records.com", { purchasable: true, purchasePrice: 9.99, renewalPrice: 9.99 });
    await registrar.register({
      domain: "ada-records.com",
      priceMinor: 999,
      registrant: REGISTRANT,
      records: RECORDS.slice(0, 1),
    });
    expect(await registrar.recordsLive("ada-records.com", RECORDS)).toBe(false);
    await registrar.register({ domain: "ada-records.com", priceMinor: 999, registrant: REGISTRANT, records: RECORDS });
    expect(await registrar.recordsLive("ada-records.com", RECORDS)).toBe(true);
    expect(fake.records.get("ada-records.com")).toHaveLength(2);
  });

  test("definitive failures: the price changed, the name was taken meanwhile, unknown to status", async () => {
    fake.offer("ada-price.com", { purchasable: true, purchasePrice: 14.99, renewalPrice: 15.99 });
    expect(
      await registrar.register({ domain: "ada-price.com", priceMinor: 1299, registrant: REGISTRANT, records: [] }),
    ).toMatchObject({ state: "failed", reason: "price_changed" });
    expect(
      await registrar.register({ domain: "ada-gone.com", priceMinor: 1299, registrant: REGISTRANT, records: [] }),
    ).toMatchObject({ state: "failed", reason: "unavailable" });
    expect(await registrar.status("ada-never.com")).toMatchObject({ state: "failed", reason: "refused" });
    expect(fake.domains.has("ada-price.com")).toBe(false);
  });

  test("renew extends by a year once; a repeated renew for the same expiry answers the new one", async () => {
    fake.offer("ada-renew.com", { purchasable: true, purchasePrice: 12.99, renewalPrice: 15.99 });
    const state = await registrar.register({
      domain: "ada-renew.com",
      priceMinor: 1299,
      registrant: REGISTRANT,
      records: [],
    });
    if (state.state !== "registered") throw new Error("not registered");
    const renewed = await registrar.renew("ada-renew.com", state.renewsAt);
    expect(renewed.renewsAt.getTime() - state.renewsAt.getTime()).toBe(365 * 24 * 3600_000);
    expect(fake.requests.find((r) => r.path === "/v4/domains/ada-renew.com:renew")?.body).toEqual({
      years: 1,
      purchasePrice: 15.99,
    });
    expect(await registrar.renew("ada-renew.com", state.renewsAt)).toEqual(renewed);
    expect(fake.requests.filter((r) => r.path === "/v4/domains/ada-renew.com:renew")).toHaveLength(1);
  });

  test("an outage, wrong credentials or an unreachable server is RegistrarUnavailable (retried later), never a failed registration", async () => {
    fake.offer("ada-outage.com", { purchasable: true, purchasePrice: 12.99, renewalPrice: 15.99 });
    fake.failNext = 1;
    await expect(registrar.check(["ada-outage.com"])).rejects.toBeInstanceOf(RegistrarUnavailable);
    fake.failNext = 1;
    await expect(
      registrar.register({ domain: "ada-outage.com", priceMinor: 1299, registrant: REGISTRANT, records: [] }),
    ).rejects.toBeInstanceOf(RegistrarUnavailable);
    expect(fake.domains.has("ada-outage.com")).toBe(false);
    const wrong = createNamecomRegistrar({ apiUrl: fake.url, username: "hatch", token: "wrong", timeoutMs: 5_000 });
    await expect(wrong.check(["ada-outage.com"])).rejects.toThrow(/401/);
    const nowhere = createNamecomRegistrar({
      apiUrl: "http://127.0.0.1:9",
      username: "hatch",
      token: "tok-123",
      timeoutMs: 2_000,
    });
    await expect(nowhere.status("ada-outage.com")).rejects.toBeInstanceOf(RegistrarUnavailable);
    // After the outage the same request goes through.
    expect(
      await registrar.register({ domain: "ada-outage.com", priceMinor: 1299, registrant: REGISTRANT, records: [] }),
    ).toMatchObject({ state: "registered" });
  });
});
