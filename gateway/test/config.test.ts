import { describe, expect, test } from "bun:test";
import { loadGatewayConfig } from "../src/config.ts";

const SECRET = "x".repeat(40);

describe("the gateway's settings", () => {
  test("PORT=0 without BASE_URL is refused at start: the gateway's own URL could not name the port it gets", () => {
    expect(() => loadGatewayConfig({ PORT: "0" }, SECRET)).toThrow(/PORT: 0 \(any free port\) needs BASE_URL too/);
  });

  test("PORT=0 with BASE_URL, and a port number alone, are taken", () => {
    expect(loadGatewayConfig({ PORT: "0", BASE_URL: "https://hatch.example" }, SECRET).baseUrl).toBe(
      "https://hatch.example",
    );
    expect(loadGatewayConfig({ PORT: "3100" }, SECRET).baseUrl).toBe("http://localhost:3100");
  });

  test("where apps are served, for the publish view's preview frame: read as the apps service reads it", () => {
    expect(loadGatewayConfig({}, SECRET).appOrigins).toEqual(["http://*.localhost:3001"]);
    expect(loadGatewayConfig({ APPS_DOMAIN: "apps.example.com" }, SECRET).appOrigins).toEqual([
      "https://*.apps.example.com",
    ]);
    expect(loadGatewayConfig({ APPS_DOMAIN: "apps.test:8080", APPS_PROTOCOL: "http" }, SECRET).appOrigins).toEqual([
      "http://*.apps.test:8080",
    ]);
    expect(loadGatewayConfig({ APP_PORT: "0" }, SECRET).appOrigins).toEqual(["http://*.localhost:*"]);
    // It goes into a CSP: nothing but a host name and a port is taken.
    expect(() => loadGatewayConfig({ APPS_DOMAIN: "apps.example.com; frame-src *" }, SECRET)).toThrow(/APPS_DOMAIN/);
  });
});
