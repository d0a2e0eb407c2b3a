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
import { addressOfHost } from "../src/host/server.ts";

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
