import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import type { SmtpSettings } from "../src/config.ts";
import { loadOrgsConfig } from "../src/config.ts";
import { dotStuff, sendMails, type OutgoingMail } from "../src/mail/smtp.ts";
import { decodeHeader, parseMail, startFakeSmtp, type FakeSmtp } from "../../../test/support/fake-smtp.ts";

const settings = (fake: FakeSmtp, extra: Partial<SmtpSettings> = {}): SmtpSettings => ({
  host: "127.0.0.1",
  port: fake.port,
  implicitTls: false,
  heloName: "hatch.test",
  ...extra,
});

const mail = (id: string, to: string, body = "Hello\n.dot line\nbye"): OutgoingMail => ({ id, from: "Hatch <no-reply@hatch.test>", to, subject: "Hi", body });

describe("SMTP client against a local SMTP server", () => {
  let fake: FakeSmtp;
  beforeAll(async () => {
    fake = await startFakeSmtp({ credentials: { user: "hatch", password: "s3cret pass" }, refuse: (to) => to.startsWith("nobody@") });
  });
  afterAll(async () => fake?.close());

  test("authenticates, sends each message in its own transaction, and dot-stuffing survives the trip", async () => {
    fake.received.length = 0;
    const outcomes = await sendMails(settings(fake, { user: "hatch", password: "s3cret pass" }), [mail("m1", "a@example.com"), mail("m2", "b@example.com")]);
    expect(outcomes).toEqual([{ id: "m1", ok: true }, { id: "m2", ok: true }]);
    expect(fake.received.map((r) => [r.from, r.to, r.auth])).toEqual([
      ["no-reply@hatch.test", ["a@example.com"], "hatch"],
      ["no-reply@hatch.test", ["b@example.com"], "hatch"],
    ]);
    const parsed = parseMail(fake.received[0]!.data);
    expect(parsed.body).toBe("Hello\n.dot line\nbye");
    expect(parsed.headers["message-id"]).toBe("<m1@hatch.test>");
    expect(parsed.headers.from).toBe("Hatch <no-reply@hatch.test>");
  });

  test("a refused recipient fails alone, permanently; the others still go", async () => {
    fake.received.length = 0;
    const outcomes = await sendMails(settings(fake, { user: "hatch", password: "s3cret pass" }), [mail("m1", "nobody@example.com"), mail("m2", "c@example.com")]);
    expect(outcomes[0]).toMatchObject({ id: "m1", ok: false, permanent: true });
    expect(outcomes[1]).toEqual({ id: "m2", ok: true });
    expect(fake.received.map((r) => r.to[0])).toEqual(["c@example.com"]);
  });

  test("a wrong password is an error for the whole batch", async () => {
    await expect(sendMails(settings(fake, { user: "hatch", password: "wrong" }), [mail("m1", "a@example.com")])).rejects.toThrow("535");
  });

  test("without credentials a server that requires them refuses the message", async () => {
    const outcomes = await sendMails(settings(fake), [mail("m1", "a@example.com")]);
    expect(outcomes[0]).toMatchObject({ ok: false, permanent: true });
  });

  test("non-ASCII subjects and bodies are encoded and come back intact", async () => {
    fake.received.length = 0;
    const subject = "Zoë Ångström invited you to Bücher & Co — a long name that needs more than one encoded word";
    await sendMails(settings(fake, { user: "hatch", password: "s3cret pass" }), [{ ...mail("m1", "a@example.com", "Grüße,\nZoë"), subject }]);
    const parsed = parseMail(fake.received[0]!.data);
    expect(parsed.headers["content-transfer-encoding"]).toBe("base64");
    // Text travels in canonical form: CRLF line breaks, inside the base64 too.
    expect(parsed.body).toBe("Grüße,\r\nZoë");
    expect(decodeHeader(parsed.headers.subject!)).toBe(subject);
    for (const line of fake.received[0]!.data.split("\r\n")) expect(line.length).toBeLessThanOrEqual(998);
  });

  test("a password is never sent in the clear to a server that is not this machine by name", async () => {
    // 127.0.0.2 reaches this machine, but the client only trusts "localhost", 127.0.0.1 and ::1 without TLS.
    const seen: string[] = [];
    const plain = createServer((s) => {
      s.write("220 plain ESMTP\r\n");
      s.on("data", (d) => {
        seen.push(String(d));
        if (String(d).startsWith("EHLO")) s.write("250-plain\r\n250 AUTH PLAIN\r\n");
      });
    });
    await new Promise<void>((r) => plain.listen(0, "127.0.0.2", r));
    const port = (plain.address() as { port: number }).port;
    const err = await sendMails({ host: "127.0.0.2", port, implicitTls: false, heloName: "x", user: "u", password: "p" }, [mail("m1", "a@example.com")]).catch((e: unknown) => e);
    expect(String(err)).toContain("offers no TLS");
    expect(seen.join("")).not.toContain("AUTH");
    plain.close();
  });

  test("dot-stuffing doubles leading dots and ends with CRLF.CRLF", () => {
    expect(dotStuff("a\r\n.b\r\n..c")).toBe("a\r\n..b\r\n...c\r\n.\r\n");
  });
});

describe("orgs mail settings", () => {
  test("SMTP_URL gives host, port, TLS mode and credentials; bad values are named", () => {
    const config = loadOrgsConfig({ SMTP_URL: "smtps://me%40x.com:p%3Ass@mail.example.com", BASE_URL: "https://hatch.example" });
    expect(config.smtp).toEqual({ host: "mail.example.com", port: 465, implicitTls: true, user: "me@x.com", password: "p:ss", heloName: "hatch.example" });
    expect(config.mailFrom).toBe("Hatch <no-reply@hatch.example>");
    expect(loadOrgsConfig({ SMTP_URL: "smtp://mail.example.com" }).smtp?.port).toBe(587);
    expect(loadOrgsConfig({}).smtp).toBeNull();
    expect(() => loadOrgsConfig({ SMTP_URL: "http://mail.example.com" })).toThrow("SMTP_URL");
    expect(() => loadOrgsConfig({ INVITATION_TTL_DAYS: "0" })).toThrow("INVITATION_TTL_DAYS");
  });
});
