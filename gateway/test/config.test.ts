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
});
