import { describe, expect, test } from "bun:test";
import { isToolError } from "@hatch/contracts";
import { checkOwnHostname, isApex, registrableDomain, relativeName } from "../src/hostnames/names.ts";
import { apexUnsupported, edgeZoneRecords, recordsOut, wantedRecords } from "../src/hostnames/records.ts";

// Which hostnames a person may point at Hatch, and the records Hatch asks for.

const config = {
  appsDomain: "hatchapps.net",
  baseUrl: "https://hatch.example.org",
  edgeCnameTarget: "edge.hatchapps.net",
};
const edge = { edgeCnameTarget: "edge.hatchapps.net", edgeIpv4: ["203.0.113.10"], edgeIpv6: ["2001:db8::10"] };

function refusal(raw: string): string {
  try {
    checkOwnHostname(raw, config);
  } catch (error) {
    if (isToolError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error(`${raw} was accepted`);
}

describe("hostname rules", () => {
  test("a person's own hostnames are accepted, normalized", () => {
    expect(checkOwnHostname("Todo.Example.COM.", config)).toBe("todo.example.com");
    expect(checkOwnHostname("example.co.uk", config)).toBe("example.co.uk");
    expect(checkOwnHostname("xn--bcher-kva.example", config)).toBe("xn--bcher-kva.example");
  });

  test("IP addresses are refused as such", () => {
    for (const ip of ["192.168.1.10", "127.0.0.1", "::1", "[2001:db8::1]", "10.0.0.1."])
      expect(refusal(ip)).toContain("is an IP address");
  });

  test("empty labels (..) are refused", () => {
    expect(refusal("todo..example.com")).toContain('empty label ("..")');
    expect(refusal("..")).toContain("invalid_input");
  });

  test("names that are not hostnames are refused with what to give instead", () => {
    for (const bad of [
      "https://todo.example.com",
      "todo.example.com/path",
      "todo",
      "-todo.example.com",
      "to_do.example.com",
      "todo.example.c",
      "a b.example.com",
      "",
    ]) {
      expect(refusal(bad)).toContain("invalid_input");
    }
    expect(refusal("https://todo.example.com")).toContain("without https://");
  });

  test("local names and Hatch's own hosts are refused", () => {
    expect(refusal("localhost")).toContain("invalid_input");
    expect(refusal("app.localhost")).toContain("local name");
    expect(refusal("printer.local")).toContain("local name");
    expect(refusal("todo.hatchapps.net")).toContain("Hatch's own addresses");
    expect(refusal("hatchapps.net")).toContain("Hatch's own addresses");
    expect(refusal("x.edge.hatchapps.net")).toContain("Hatch's own addresses");
    expect(refusal("hatch.example.org")).toContain("Hatch's own addresses");
    expect(refusal("co.uk")).toContain("public suffix");
  });

  test("apex or subdomain, with multi-label public suffixes", () => {
    expect(isApex("example.com")).toBe(true);
    expect(isApex("www.example.com")).toBe(false);
    expect(isApex("example.co.uk")).toBe(true);
    expect(isApex("shop.example.co.uk")).toBe(false);
    expect(isApex("example.com.au")).toBe(true);
    expect(registrableDomain("a.b.example.co.uk")).toBe("example.co.uk");
    expect(relativeName("_hatch-challenge.todo.example.com", "todo.example.com")).toBe("_hatch-challenge.todo");
    expect(relativeName("example.com", "example.com")).toBe("@");
  });
});

describe("records asked for", () => {
  test("a subdomain: the TXT proof and a CNAME to the edge, each with its purpose", () => {
    const records = recordsOut("todo.example.com", wantedRecords("custom", "todo.example.com", "tok", edge));
    expect(records).toEqual([
      {
        type: "TXT",
        name: "_hatch-challenge.todo",
        value: "tok",
        ttl: 300,
        status: "missing",
        purpose: expect.stringContaining("proves you control"),
      },
      {
        type: "CNAME",
        name: "todo",
        value: "edge.hatchapps.net",
        ttl: 3600,
        status: "missing",
        purpose: expect.stringContaining("Hatch's edge"),
      },
    ]);
  });

  test("an apex: the TXT proof and A/AAAA to the edge's addresses; without addresses an apex is refused", () => {
    const records = wantedRecords("custom", "example.com", "tok", edge);
    expect(records.map((r) => `${r.type} ${r.name} ${r.value}`)).toEqual([
      "TXT _hatch-challenge.example.com tok",
      "A example.com 203.0.113.10",
      "AAAA example.com 2001:db8::10",
    ]);
    expect(apexUnsupported("example.com", { ...edge, edgeIpv4: [], edgeIpv6: [] })).toBe(true);
    expect(apexUnsupported("www.example.com", { ...edge, edgeIpv4: [], edgeIpv6: [] })).toBe(false);
  });

  test("a company domain: the TXT proof and a wildcard CNAME; a bought domain: routing only", () => {
    expect(wantedRecords("company", "apps.acme.com", "tok", edge).map((r) => `${r.type} ${r.name}`)).toEqual([
      "TXT _hatch-challenge.apps.acme.com",
      "CNAME *.apps.acme.com",
    ]);
    expect(wantedRecords("bought", "acme.dev", "", edge).map((r) => r.type)).toEqual(["A", "AAAA"]);
    expect(edgeZoneRecords("acme.dev", edge)).toEqual([
      { type: "A", host: "", value: "203.0.113.10" },
      { type: "AAAA", host: "", value: "2001:db8::10" },
    ]);
    expect(edgeZoneRecords("acme.dev", { ...edge, edgeIpv4: [], edgeIpv6: [] })).toEqual([
      { type: "CNAME", host: "", value: "edge.hatchapps.net" },
    ]);
  });
});
