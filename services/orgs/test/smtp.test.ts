import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import type { SmtpSettings } from "../src/config.ts";
import { loadOrgsConfig } from "../src/config.ts";
import { createSmtpSender, type OutgoingMail, type SmtpOptions, type SmtpSender } from "../src/mail/smtp.ts";
import {
  decodeHeader,
  makeTestCert,
  parseMail,
  startFakeSmtp,
  type FakeSmtp,
  type TestCert,
} from "../../../test/support/fake-smtp.ts";

const settings = (fake: FakeSmtp, extra: Partial<SmtpSettings> = {}): SmtpSettings => ({
  host: "127.0.0.1",
  port: fake.port,
  implicitTls: false,
  heloName: "hatch.test",
  ...extra,
});

const mail = (id: string, to: string, body = "Hello\n.dot line\nbye"): OutgoingMail => ({
  id,
  from: "Hatch <no-reply@hatch.test>",
  to,
  subject: "Hi",
  body,
});

// Every sender a test opens is closed after it, so no pooled connection outlives its test.
const senders: SmtpSender[] = [];
const open = (s: SmtpSettings, options?: SmtpOptions) => {
  const sender = createSmtpSender(s, options);
  senders.push(sender);
  return sender;
};
afterEach(() => {
  for (const s of senders.splice(0)) s.close();
});

const byRecipient = (fake: FakeSmtp) => [...fake.received].sort((a, b) => a.to[0]!.localeCompare(b.to[0]!));

describe("SMTP sender against a local SMTP server", () => {
  let fake: FakeSmtp;
  const login = { user: "hatch", password: "s3cret pass" };
  beforeAll(async () => {
    fake = await startFakeSmtp({
      credentials: login,
      refuse: (to) => to.startsWith("nobody@"),
      defer: (to) => to.startsWith("busy@"),
    });
  });
  afterAll(async () => fake?.close());

  test("authenticates, sends each message in its own transaction, and dot-stuffing survives the trip", async () => {
    fake.received.length = 0;
    const outcomes = await open(settings(fake, login)).send([mail("m1", "a@example.com"), mail("m2", "b@example.com")]);
    expect(outcomes).toEqual([
      { id: "m1", ok: true },
      { id: "m2", ok: true },
    ]);
    expect(byRecipient(fake).map((r) => [r.from, r.to, r.auth])).toEqual([
      ["no-reply@hatch.test", ["a@example.com"], "hatch"],
      ["no-reply@hatch.test", ["b@example.com"], "hatch"],
    ]);
    const parsed = parseMail(byRecipient(fake)[0]!.data);
    expect(parsed.body).toBe("Hello\n.dot line\nbye");
    expect(parsed.headers["message-id"]).toBe("<m1@hatch.test>");
    expect(parsed.headers.from).toBe("Hatch <no-reply@hatch.test>");
  });

  test("a pooled sender reuses its connection: two passes, one login", async () => {
    const before = fake.connections;
    const sender = open(settings(fake, login), { maxConnections: 1 });
    expect(await sender.send([mail("m1", "a@example.com")])).toEqual([{ id: "m1", ok: true }]);
    expect(await sender.send([mail("m2", "b@example.com")])).toEqual([{ id: "m2", ok: true }]);
    expect(fake.connections).toBe(before + 1);
  });

  test("when the server drops an idle pooled connection, the next pass connects again", async () => {
    const first = await startFakeSmtp();
    const sender = open(settings(first));
    expect(await sender.send([mail("m1", "a@example.com")])).toEqual([{ id: "m1", ok: true }]);
    await first.close(); // ends the idle connection from the server's side
    const second = await startFakeSmtp({ port: first.port });
    try {
      expect(await sender.send([mail("m2", "b@example.com")])).toEqual([{ id: "m2", ok: true }]);
      expect(second.received.map((r) => r.to[0])).toEqual(["b@example.com"]);
    } finally {
      await second.close();
    }
  });

  test("AUTH LOGIN works as well as PLAIN (the fake offers both)", async () => {
    // Through nodemailer directly: Hatch's sender lets it choose, and it chooses PLAIN.
    const { createTransport } = await import("nodemailer");
    const transport = createTransport({
      host: "127.0.0.1",
      port: fake.port,
      auth: { user: login.user, pass: login.password },
      authMethod: "LOGIN",
    });
    fake.received.length = 0;
    try {
      await transport.sendMail({ from: "no-reply@hatch.test", to: "login@example.com", text: "x" });
      expect(fake.received.map((r) => [r.to[0], r.auth])).toEqual([["login@example.com", "hatch"]]);
      const wrong = createTransport({
        host: "127.0.0.1",
        port: fake.port,
        auth: { user: login.user, pass: "nope" },
        authMethod: "LOGIN",
      });
      await expect(wrong.sendMail({ from: "no-reply@hatch.test", to: "login@example.com", text: "x" })).rejects.toThrow(
        "535",
      );
      wrong.close();
    } finally {
      transport.close();
    }
  });

  test("a refused recipient fails alone, permanently; a deferred one temporarily; the others still go", async () => {
    fake.received.length = 0;
    const outcomes = await open(settings(fake, login)).send([
      mail("m1", "nobody@example.com"),
      mail("m2", "c@example.com"),
      mail("m3", "busy@example.com"),
    ]);
    expect(outcomes[0]).toMatchObject({ id: "m1", ok: false, permanent: true });
    expect(outcomes[0]!.ok ? "" : outcomes[0]!.error).toContain("550");
    expect(outcomes[1]).toEqual({ id: "m2", ok: true });
    expect(outcomes[2]).toMatchObject({ id: "m3", ok: false, permanent: false });
    expect(outcomes[2]!.ok ? "" : outcomes[2]!.error).toContain("450");
    expect(fake.received.map((r) => r.to[0])).toEqual(["c@example.com"]);
  });

  test("a wrong password fails every message of the batch for now (retried), naming the login, never the password", async () => {
    const outcomes = await open(settings(fake, { user: "hatch", password: "wrong" })).send([
      mail("m1", "a@example.com"),
      mail("m2", "b@example.com"),
    ]);
    for (const o of outcomes) {
      expect(o).toMatchObject({ ok: false, permanent: false });
      expect(o.ok ? "" : o.error).toContain("login failed");
      expect(o.ok ? "" : o.error).toContain("535");
      expect(o.ok ? "" : o.error).not.toContain("wrong");
    }
  });

  test("without credentials a server that requires them refuses the message", async () => {
    const outcomes = await open(settings(fake)).send([mail("m1", "a@example.com")]);
    expect(outcomes[0]).toMatchObject({ ok: false, permanent: true });
    expect(outcomes[0]!.ok ? "" : outcomes[0]!.error).toContain("530");
  });

  test("a server that is not there fails the batch for now", async () => {
    const gone = await startFakeSmtp();
    await gone.close();
    const outcomes = await open(settings(gone)).send([mail("m1", "a@example.com")]);
    expect(outcomes[0]).toMatchObject({ ok: false, permanent: false });
    expect(outcomes[0]!.ok ? "" : outcomes[0]!.error).toContain("connection failed");
  });

  test("non-ASCII subjects and bodies are encoded and come back intact", async () => {
    fake.received.length = 0;
    const subject = "Zoë Ångström invited you to Bücher & Co — a long name that needs more than one encoded word";
    await open(settings(fake, login)).send([{ ...mail("m1", "a@example.com", "Grüße,\nZoë"), subject }]);
    const parsed = parseMail(fake.received[0]!.data);
    expect(parsed.headers["content-transfer-encoding"]).toBe("base64");
    // Text travels in canonical form: CRLF line breaks, inside the base64 too.
    expect(parsed.body).toBe("Grüße,\r\nZoë");
    expect(decodeHeader(parsed.headers.subject!)).toBe(subject);
    for (const line of fake.received[0]!.data.split("\r\n")) expect(line.length).toBeLessThanOrEqual(998);
  });

  test("a line break in a subject or an address cannot add a header", async () => {
    fake.received.length = 0;
    await open(settings(fake, login)).send([
      { ...mail("m1", "a@example.com"), subject: "Hi\r\nBcc: evil@example.com" },
    ]);
    const parsed = parseMail(fake.received[0]!.data);
    expect(parsed.headers.bcc).toBeUndefined();
    expect(fake.received[0]!.to).toEqual(["a@example.com"]);
  });

  test("a password is never sent in the clear to a server that is not this machine by name", async () => {
    // 127.0.0.2 reaches this machine, but the sender only trusts "localhost", 127.0.0.1 and ::1 without TLS.
    const seen: string[] = [];
    const plain = createServer((s) => {
      s.write("220 plain ESMTP\r\n");
      s.on("data", (d) => {
        seen.push(String(d));
        s.write(String(d).startsWith("EHLO") ? "250-plain\r\n250 AUTH PLAIN\r\n" : "502 not implemented\r\n");
      });
    });
    await new Promise<void>((r) => plain.listen(0, "127.0.0.2", r));
    const port = (plain.address() as { port: number }).port;
    const [outcome] = await open({
      host: "127.0.0.2",
      port,
      implicitTls: false,
      heloName: "x",
      user: "u",
      password: "p",
    }).send([mail("m1", "a@example.com")]);
    expect(outcome).toMatchObject({ ok: false, permanent: false });
    expect(outcome!.ok ? "" : outcome!.error).toContain("offers no working STARTTLS");
    expect(seen.join("")).not.toContain("AUTH");
    plain.close();
  });
});

describe("SMTP sender over TLS", () => {
  let cert: TestCert;
  const login = { user: "hatch", password: "tls pass" };
  beforeAll(() => {
    cert = makeTestCert();
  });

  test("smtp:// upgrades with STARTTLS when the server offers it, before the password is sent", async () => {
    const fake = await startFakeSmtp({ credentials: login, tls: cert });
    try {
      const outcomes = await open(settings(fake, login), { tls: { ca: cert.cert } }).send([
        mail("m1", "a@example.com"),
      ]);
      expect(outcomes).toEqual([{ id: "m1", ok: true }]);
      expect(fake.received.map((r) => [r.to[0], r.auth, r.secure])).toEqual([["a@example.com", "hatch", true]]);
    } finally {
      await fake.close();
    }
  });

  test("smtps:// speaks TLS from the first byte", async () => {
    const fake = await startFakeSmtp({ credentials: login, tls: cert, implicitTls: true });
    try {
      expect(fake.url.startsWith("smtps://")).toBe(true);
      const outcomes = await open(settings(fake, { ...login, implicitTls: true }), { tls: { ca: cert.cert } }).send([
        mail("m1", "a@example.com"),
      ]);
      expect(outcomes).toEqual([{ id: "m1", ok: true }]);
      expect(fake.received.map((r) => [r.auth, r.secure])).toEqual([["hatch", true]]);
    } finally {
      await fake.close();
    }
  });

  test("a certificate the sender does not trust stops the mail before the password (retried later)", async () => {
    const fake = await startFakeSmtp({ credentials: login, tls: cert });
    try {
      const [outcome] = await open(settings(fake, login)).send([mail("m1", "a@example.com")]);
      expect(outcome).toMatchObject({ ok: false, permanent: false });
      expect(fake.received).toHaveLength(0);
    } finally {
      await fake.close();
    }
  });
});

describe("orgs mail settings", () => {
  test("SMTP_URL gives host, port, TLS mode and credentials; bad values are named", () => {
    const config = loadOrgsConfig({
      SMTP_URL: "smtps://me%40x.com:p%3Ass@mail.example.com",
      BASE_URL: "https://hatch.example",
    });
    expect(config.smtp).toEqual({
      host: "mail.example.com",
      port: 465,
      implicitTls: true,
      user: "me@x.com",
      password: "p:ss",
      heloName: "hatch.example",
    });
    expect(config.mailFrom).toBe("Hatch <no-reply@hatch.example>");
    expect(loadOrgsConfig({ SMTP_URL: "smtp://mail.example.com" }).smtp?.port).toBe(587);
    expect(loadOrgsConfig({}).smtp).toBeNull();
    expect(() => loadOrgsConfig({ SMTP_URL: "http://mail.example.com" })).toThrow("SMTP_URL");
    expect(() => loadOrgsConfig({ INVITATION_TTL_DAYS: "0" })).toThrow("INVITATION_TTL_DAYS");
  });
});
