import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestDns, type TestDnsServer } from "../../../test/support/domains-dns.ts";
import { createDnsLookup } from "../src/dns/lookup.ts";
import { checkRecords, wantedRecords } from "../src/hostnames/records.ts";

// The DNS check against a real authoritative server on loopback that the test controls, through node:dns.

const edge = { edgeCnameTarget: "edge.hatchapps.net", edgeIpv4: ["203.0.113.10"], edgeIpv6: [] };

describe("DNS checks", () => {
  let dns: TestDnsServer;
  beforeAll(async () => {
    dns = await startTestDns();
  });
  afterAll(() => dns?.close());
  const lookup = () => createDnsLookup([dns.address]);

  test("nothing there yet: every record missing, the problem names them", async () => {
    const check = await checkRecords(
      lookup(),
      "a.example.test",
      wantedRecords("custom", "a.example.test", "tok-a", edge),
    );
    expect(check.complete).toBe(false);
    expect(check.records.map((r) => r.seen)).toEqual([false, false]);
    expect(check.problem).toBe(
      'The TXT record _hatch-challenge.a.example.test is not there yet (it should hold "tok-a"); the CNAME a.example.test → edge.hatchapps.net is not there yet. DNS changes can take a few minutes to show.',
    );
    expect(dns.asked("_hatch-challenge.a.example.test", "TXT")).toBeGreaterThan(0);
  });

  test("a CNAME to the wrong place and a wrong TXT say what they hold and what they should", async () => {
    dns.add("_hatch-challenge.b.example.test", "TXT", "someone-else");
    dns.add("b.example.test", "CNAME", "x.example.net");
    const check = await checkRecords(
      lookup(),
      "b.example.test",
      wantedRecords("custom", "b.example.test", "tok-b", edge),
    );
    expect(check.complete).toBe(false);
    expect(check.records.map((r) => r.found)).toEqual([["someone-else"], ["x.example.net"]]);
    expect(check.problem).toContain(
      'The TXT record _hatch-challenge.b.example.test holds "someone-else", it should hold "tok-b"',
    );
    expect(check.problem).toContain(
      "the CNAME b.example.test points to x.example.net, it should point to edge.hatchapps.net",
    );
  });

  test("A records where the CNAME should be are named", async () => {
    dns.add("c.example.test", "A", "198.51.100.7");
    const check = await checkRecords(
      lookup(),
      "c.example.test",
      wantedRecords("custom", "c.example.test", "tok-c", edge),
    );
    expect(check.problem).toContain(
      "the name c.example.test has A records (198.51.100.7) instead of a CNAME to edge.hatchapps.net",
    );
  });

  test("all records in place: complete, no problem", async () => {
    dns.add("_hatch-challenge.d.example.test", "TXT", "tok-d");
    dns.add("d.example.test", "CNAME", "EDGE.hatchapps.net.");
    const check = await checkRecords(
      lookup(),
      "d.example.test",
      wantedRecords("custom", "d.example.test", "tok-d", edge),
    );
    expect(check).toMatchObject({ complete: true, problem: null });
    expect(check.records.every((r) => r.seen)).toBe(true);
  });

  test("an apex: its A record must be the edge's, and only the edge's", async () => {
    dns.add("_hatch-challenge.apex.test", "TXT", "tok-e");
    dns.add("apex.test", "A", "203.0.113.10");
    dns.add("apex.test", "A", "198.51.100.1");
    const wanted = wantedRecords("custom", "apex.test", "tok-e", edge);
    const mixed = await checkRecords(lookup(), "apex.test", wanted);
    expect(mixed.complete).toBe(false);
    expect(mixed.problem).toContain(
      "The A records of apex.test also point to 198.51.100.1, which is not Hatch's edge; remove those",
    );
    dns.remove("apex.test", "A");
    dns.add("apex.test", "A", "203.0.113.10");
    expect(await checkRecords(lookup(), "apex.test", wanted)).toMatchObject({ complete: true, problem: null });
  });

  test("a company domain's wildcard CNAME is seen through a name under it", async () => {
    const wanted = wantedRecords("company", "apps.acme.test", "tok-f", edge);
    dns.add("_hatch-challenge.apps.acme.test", "TXT", "tok-f");
    expect((await checkRecords(lookup(), "apps.acme.test", wanted)).problem).toContain(
      "The CNAME *.apps.acme.test → edge.hatchapps.net is not there yet",
    );
    dns.add("*.apps.acme.test", "CNAME", "edge.hatchapps.net");
    expect(await checkRecords(lookup(), "apps.acme.test", wanted)).toMatchObject({ complete: true, problem: null });
  });

  test("a DNS server that does not answer is a problem to retry, not an error", async () => {
    const silent = createDnsLookup(["127.0.0.1:9"], 200);
    const check = await checkRecords(
      silent,
      "g.example.test",
      wantedRecords("custom", "g.example.test", "tok-g", edge),
    );
    expect(check.complete).toBe(false);
    expect(check.problem).toContain("The DNS lookup of the TXT record of _hatch-challenge.g.example.test failed");
    expect(check.problem).not.toContain("is not there yet");
  });
});
