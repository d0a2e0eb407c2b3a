import { describe, expect, test } from "bun:test";
import {
  deriveKey,
  issueConfirm,
  openViewerCheck,
  signViewerCheck,
  signViewerTicket,
  verifyViewerTicket,
  VIEWER_CHECK_TTL_SECONDS,
  VIEWER_TICKET_TTL_SECONDS,
} from "@hatch/contracts";

const key = deriveKey("viewer-test-secret".padEnd(40, "x"), "viewer-ticket");
const viewer = { sub: "user-1", session: "session-hash-1", address: "my-app" };

describe("viewer tickets", () => {
  test("a ticket checks out for the app it was issued for and carries who the viewer is", () => {
    const check = verifyViewerTicket(key, signViewerTicket(key, viewer), "my-app");
    expect(check.ok).toBe(true);
    if (!check.ok) return;
    expect(check.claims).toMatchObject({ v: 2, sub: "user-1", session: "session-hash-1", address: "my-app" });
    expect(check.claims.nonce.length).toBeGreaterThanOrEqual(16);
  });

  test("every ticket has its own nonce", () => {
    const nonces = new Set(
      Array.from({ length: 20 }, () => {
        const check = verifyViewerTicket(key, signViewerTicket(key, viewer), "my-app");
        return check.ok ? check.claims.nonce : "";
      }),
    );
    expect(nonces.size).toBe(20);
  });

  test("a ticket for another app is refused", () => {
    expect(verifyViewerTicket(key, signViewerTicket(key, viewer), "other-app")).toEqual({
      ok: false,
      reason: "wrong_app",
    });
  });

  test("a ticket expires after a minute", () => {
    const issuedAt = Date.now();
    const ticket = signViewerTicket(key, viewer, issuedAt);
    expect(verifyViewerTicket(key, ticket, "my-app", issuedAt + (VIEWER_TICKET_TTL_SECONDS - 1) * 1000).ok).toBe(true);
    expect(verifyViewerTicket(key, ticket, "my-app", issuedAt + (VIEWER_TICKET_TTL_SECONDS + 1) * 1000)).toEqual({
      ok: false,
      reason: "expired",
    });
  });

  test("a forged, tampered or foreign token is invalid", () => {
    const ticket = signViewerTicket(key, viewer);
    const other = deriveKey("another-secret".padEnd(40, "y"), "viewer-ticket");
    expect(verifyViewerTicket(other, ticket, "my-app")).toEqual({ ok: false, reason: "invalid" });
    const [body, mac] = ticket.split(".");
    const claims = JSON.parse(Buffer.from(body!, "base64url").toString());
    const forged = `${Buffer.from(JSON.stringify({ ...claims, sub: "user-2" })).toString("base64url")}.${mac}`;
    expect(verifyViewerTicket(key, forged, "my-app")).toEqual({ ok: false, reason: "invalid" });
    expect(verifyViewerTicket(key, "garbage", "my-app")).toEqual({ ok: false, reason: "invalid" });
    expect(verifyViewerTicket(key, `${body}.`, "my-app")).toEqual({ ok: false, reason: "invalid" });
    // Another token signed with the same key (a confirm token here) is not a ticket.
    const { token } = issueConfirm(key, { sub: "user-1", tool: "delete_tool", input: { address: "my-app" } });
    expect(verifyViewerTicket(key, token, "my-app")).toEqual({ ok: false, reason: "invalid" });
  });
});

describe("viewer checks (the app host's signed question to the gateway)", () => {
  test("a check opens with the key it was signed with, within its minute", () => {
    const now = Date.now();
    const check = signViewerCheck(key, { sub: "user-1", session: "s-1" }, now);
    expect(openViewerCheck(key, check, now)).toEqual({ sub: "user-1", session: "s-1" });
    expect(openViewerCheck(key, check, now + (VIEWER_CHECK_TTL_SECONDS + 1) * 1000)).toBeNull();
    expect(openViewerCheck(deriveKey("another-secret".padEnd(40, "y"), "viewer-ticket"), check, now)).toBeNull();
  });

  test("a check may name the app whose consent the answer must carry; the name is signed with the rest", () => {
    const app = { id: "app_1", owner: "user-2" };
    const check = signViewerCheck(key, { sub: "user-1", session: "s-1", app });
    expect(openViewerCheck(key, check)).toEqual({ sub: "user-1", session: "s-1", app });
    // Naming another app (or dropping the name) breaks the signature.
    const [body, mac] = check.split(".");
    const claims = JSON.parse(Buffer.from(body!, "base64url").toString());
    const other = Buffer.from(JSON.stringify({ ...claims, app: { id: "app_2", owner: "user-2" } })).toString(
      "base64url",
    );
    expect(openViewerCheck(key, `${other}.${mac}`)).toBeNull();
  });

  test("a ticket is not a check, and a check is not a ticket", () => {
    const ticket = signViewerTicket(key, viewer);
    expect(openViewerCheck(key, ticket)).toBeNull();
    expect(verifyViewerTicket(key, signViewerCheck(key, viewer), "my-app")).toEqual({ ok: false, reason: "invalid" });
  });
});
