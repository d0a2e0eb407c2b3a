import { describe, expect, test } from "bun:test";
import {
  cacheControlOf,
  candidatesOf,
  etagMatches,
  hasExtension,
  isHashedAsset,
  sameOriginTarget,
  storedPathOf,
} from "../src/http/paths.ts";
import { previewOrigin } from "../src/config.ts";
import { addressOfHost, previewLabel, previewOfHost } from "../src/host/host-names.ts";
import { addressBase } from "../src/publish/commit.ts";
import { plainFileTarget } from "../src/host/server.ts";

describe("request paths", () => {
  test("plain paths map to stored keys", () => {
    expect(storedPathOf("/")).toBe("");
    expect(storedPathOf("/index.html")).toBe("index.html");
    expect(storedPathOf("/dir/")).toBe("dir/");
    expect(storedPathOf("/assets/index-B1a2C3d4.js")).toBe("assets/index-B1a2C3d4.js");
  });

  test("percent-encoding is decoded per segment", () => {
    expect(storedPathOf("/my%20file.txt")).toBe("my file.txt");
    expect(storedPathOf("/caf%C3%A9/")).toBe("café/");
  });

  test("nothing can climb out or smuggle a separator", () => {
    for (const bad of [
      "/../secret",
      "/a/../../b",
      "/%2e%2e/x",
      "/a/%2E%2E/b",
      "/./x",
      "/a%2Fb",
      "/a%2fb",
      "/a%5Cb",
      "/a\\b",
      "/a%00b",
      "/%E0%A4%A",
      "/a//b",
      "nope",
    ]) {
      expect({ bad, path: storedPathOf(bad) }).toEqual({ bad, path: null });
    }
  });

  test("candidates: index.html for directories, .html and /index.html for bare names", () => {
    expect(candidatesOf("")).toEqual(["index.html"]);
    expect(candidatesOf("docs/")).toEqual(["docs/index.html"]);
    expect(candidatesOf("about")).toEqual(["about", "about.html", "about/index.html"]);
    expect(hasExtension("a/b.js")).toBe(true);
    expect(hasExtension("users/42")).toBe(false);
    expect(hasExtension("v1.2/users")).toBe(false);
  });
});

describe("caching", () => {
  test("bundler hashes are recognised; plain names are not", () => {
    for (const hashed of [
      "assets/index-B1a2C3d4.js",
      "main.3f2a1b9c.css",
      "chunk-D_Bq-x9Z.js",
      "assets/index-B1a2C3d4.js.map",
      "logo.a1b2c3d4e5f6.svg",
    ]) {
      expect({ hashed, is: isHashedAsset(hashed) }).toEqual({ hashed, is: true });
    }
    for (const plain of [
      "app.js",
      "my-component-library.js",
      "bundle.production.js",
      "jquery-3.7.1.min.js",
      "assets/index-B1a2C3.js",
      "favicon.ico",
    ]) {
      expect({ plain, is: isHashedAsset(plain) }).toEqual({ plain, is: false });
    }
  });

  test("HTML revalidates, hashed assets are immutable, the rest is short; private apps say private", () => {
    expect(cacheControlOf("index.html", "text/html;charset=utf-8", true)).toBe("no-cache");
    expect(cacheControlOf("index.html", "text/html", false)).toBe("private, no-cache");
    expect(cacheControlOf("assets/index-B1a2C3d4.js", "text/javascript", true)).toBe(
      "public, max-age=31536000, immutable",
    );
    expect(cacheControlOf("assets/index-B1a2C3d4.js", "text/javascript", false)).toBe(
      "private, max-age=31536000, immutable",
    );
    expect(cacheControlOf("app.js", "text/javascript", true)).toBe("public, max-age=60, must-revalidate");
  });

  test("If-None-Match: exact, weak, listed, star", () => {
    const etag = '"abc"';
    expect(etagMatches('"abc"', etag)).toBe(true);
    expect(etagMatches('W/"abc"', etag)).toBe(true);
    expect(etagMatches('"x", "abc"', etag)).toBe(true);
    expect(etagMatches("*", etag)).toBe(true);
    expect(etagMatches('"abd"', etag)).toBe(false);
    expect(etagMatches(null, etag)).toBe(false);
  });
});

describe("redirect targets after sign-in", () => {
  const origin = "http://my-app.localhost:3001";
  test("paths on the app's origin are kept with their query", () => {
    expect(sameOriginTarget("/notes/7?tab=2", origin)).toBe(`${origin}/notes/7?tab=2`);
    expect(sameOriginTarget("/", origin)).toBe(`${origin}/`);
  });
  test("anything that would leave the origin goes to the app's root instead", () => {
    for (const bad of [
      "//evil.example/x",
      "/\\evil.example",
      "/\t/evil.example",
      "https://evil.example/",
      "javascript:alert(1)",
      "",
      null,
      "evil",
    ]) {
      expect({ bad, to: sameOriginTarget(bad, origin) }).toEqual({ bad, to: `${origin}/` });
    }
  });
});

describe("hosts", () => {
  test("an app's subdomain, the bare apps domain, and everything else", () => {
    expect(addressOfHost("my-app.localhost:3001", "localhost:3001")).toBe("my-app");
    expect(addressOfHost("MY-APP.localhost:3001", "localhost:3001")).toBe("my-app");
    expect(addressOfHost("localhost:3001", "localhost:3001")).toBe("");
    expect(addressOfHost("my-app.localhost:3002", "localhost:3001")).toBeNull();
    expect(addressOfHost("a.b.localhost:3001", "localhost:3001")).toBeNull();
    expect(addressOfHost("-x.localhost:3001", "localhost:3001")).toBeNull();
    expect(addressOfHost("evil.example", "localhost:3001")).toBeNull();
    expect(addressOfHost(null, "localhost:3001")).toBeNull();
    // Production: no port in the apps domain; a proxy may still pass one on.
    expect(addressOfHost("my-app.apps.example.com", "apps.example.com")).toBe("my-app");
    expect(addressOfHost("my-app.apps.example.com:443", "apps.example.com")).toBe("my-app");
    expect(addressOfHost("my-app.apps.example.com.", "apps.example.com")).toBe("my-app");
    expect(addressOfHost("my-app.notapps.example.com", "apps.example.com")).toBeNull();
  });
});

describe("version preview hosts", () => {
  test("v<N>--<address> one label below the apps domain names a version's preview, never an app", () => {
    expect(previewOfHost("v3--my-app.localhost:3001", "localhost:3001")).toEqual({ address: "my-app", version: 3 });
    expect(previewOfHost("V12--My-App.apps.example.com:443", "apps.example.com")).toEqual({
      address: "my-app",
      version: 12,
    });
    expect(previewOfHost("v1--a.apps.example.com.", "apps.example.com")).toEqual({ address: "a", version: 1 });
    // Not a preview: no version, a leading zero, version 0, an address that is no address, deeper or other names.
    for (const host of [
      "my-app.apps.example.com",
      "v--my-app.apps.example.com",
      "v03--my-app.apps.example.com",
      "v0--my-app.apps.example.com",
      "v1--.apps.example.com",
      "v1---my-app.apps.example.com",
      "v1--my-app-.apps.example.com",
      "v1--my--app.apps.example.com",
      "v1--v2--my-app.apps.example.com",
      "v1--my-app.x.apps.example.com",
      "my-app.v1.preview.apps.example.com",
      "v1--my-app.evil.example",
      "v1--my-app.localhost:3002",
    ])
      expect({
        host,
        preview: previewOfHost(host, host.includes("localhost") ? "localhost:3001" : "apps.example.com"),
      }).toEqual({
        host,
        preview: null,
      });
    // The same labels are no app's address either: a `--` label is never an app.
    expect(addressOfHost("v3--my-app.apps.example.com", "apps.example.com")).toBeNull();
    expect(addressOfHost("my--app.apps.example.com", "apps.example.com")).toBeNull();
    expect(addressOfHost("v3-my-app.apps.example.com", "apps.example.com")).toBe("v3-my-app");
  });

  test("no address publish makes contains --, so no app address is ever read as a preview", () => {
    for (const name of [
      "My  App",
      "a -- b",
      "x--y",
      "--lead",
      "trail--",
      "Ünïcödé -- näme",
      "v2--notes",
      "***",
      "a_-_b",
    ]) {
      const address = addressBase(name);
      expect({ name, address, dashes: address.includes("--") }).toEqual({ name, address, dashes: false });
      expect(addressOfHost(`${address}.apps.example.com`, "apps.example.com")).toBe(address);
      expect(previewOfHost(`${address}.apps.example.com`, "apps.example.com")).toBeNull();
    }
  });

  test("a preview's origin reads back as that preview; a label too long for DNS has none", () => {
    const config = { appsProtocol: "https:", appsDomain: "apps.example.com" } as const;
    expect(previewOrigin(config, "notes", 7)).toBe("https://v7--notes.apps.example.com");
    expect(previewOfHost(new URL(previewOrigin(config, "notes", 7)!).host, config.appsDomain)).toEqual({
      address: "notes",
      version: 7,
    });
    expect(previewOrigin({ appsProtocol: "http:", appsDomain: "localhost:3001" }, "notes", 2)).toBe(
      "http://v2--notes.localhost:3001",
    );
    // The longest address publish makes: 48 characters of the name, then a random `-xxxxx` suffix.
    const longest = `${addressBase("n".repeat(80))}-abcde`;
    expect(longest.length).toBe(54);
    expect(previewLabel(longest, 999_999)).toBe(`v999999--${longest}`);
    expect(previewLabel(longest, 1_000_000)).toBeNull();
    expect(previewOrigin(config, longest, 1_000_000)).toBeNull();
    expect(previewLabel("a".repeat(63), 1)).toBeNull();
  });
});

describe("plainFileTarget: the app host's path without a URL parse", () => {
  const origin = "http://my-app.localhost:3001";
  test("a plain path is exactly what URL gives", () => {
    for (const path of [
      "/",
      "/index.html",
      "/assets/index-B1a2C3d4.js",
      "/a/b/",
      "/.well-known/x",
      "/a..b/c.",
      "/~me/x_y-z",
    ]) {
      expect(plainFileTarget(origin + path)).toEqual({ pathname: new URL(origin + path).pathname, search: "" });
    }
  });
  test("anything URL would change, a query, or Hatch's own paths are left to the full parse", () => {
    for (const path of [
      "/a/../b",
      "/a/./b",
      "/..",
      "/.",
      "/a%2e%2e/b",
      "/a b",
      "/a\\b",
      "/é",
      "/x?y=1",
      "/x#y",
      "/_hatch/client.js",
      "/_hatch/auth",
      "/api",
      "/api/items",
    ]) {
      expect(plainFileTarget(origin + path)).toBeNull();
    }
    // Paths that only start like Hatch's are the app's.
    expect(plainFileTarget(`${origin}/apis/x`)?.pathname).toBe("/apis/x");
    expect(plainFileTarget(`${origin}/_hatchery`)?.pathname).toBe("/_hatchery");
  });
});
