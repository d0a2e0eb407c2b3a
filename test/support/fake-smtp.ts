import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer, createSecureContext, TLSSocket } from "node:tls";
import { selfSignedCertificate } from "./certificates.ts";

/** A message as the fake server received it: the envelope and the raw DATA, un-dot-stuffed. */
export interface ReceivedMail {
  from: string;
  to: string[];
  data: string;
  auth: string | null;
  /** Whether the transaction ran over TLS (STARTTLS or implicit). */
  secure: boolean;
}

/** A key and a self-signed certificate for 127.0.0.1 and localhost (the client trusts it as its CA). */
export interface TestCert {
  key: string;
  cert: string;
}

export interface FakeSmtpOptions {
  /** Require AUTH PLAIN with this user and password before MAIL. */
  credentials?: { user: string; password: string };
  /** Recipients refused with a permanent 550. */
  refuse?: (recipient: string) => boolean;
  /** Recipients deferred with a temporary 450 (try again later). */
  defer?: (recipient: string) => boolean;
  /** Listen on this port (default: any free one). */
  port?: number;
  /** Offer STARTTLS with this certificate (and, with `implicitTls`, speak TLS from the first byte). */
  tls?: TestCert;
  implicitTls?: boolean;
}

export interface FakeSmtp {
  url: string;
  port: number;
  received: ReceivedMail[];
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/** RFC 5321 limit on a line, CRLF included. */
const MAX_LINE = 1000;

/** A throwaway self-signed certificate for localhost. */
export function makeTestCert(): TestCert {
  const dir = mkdtempSync(join(tmpdir(), "fake-smtp-"));
  try {
    const { key, cert } = selfSignedCertificate(dir, "smtp", "localhost", ["DNS:localhost", "IP:127.0.0.1"]);
    return { key, cert };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A local SMTP server that speaks the protocol the way a submission server does (EHLO with extensions,
 * STARTTLS or implicit TLS when given a certificate, AUTH PLAIN and LOGIN, MAIL/RCPT/DATA with
 * dot-transparency, RSET, NOOP, QUIT) and enforces its rules: commands in order, lines of at most 1000
 * octets, a new EHLO after STARTTLS, authentication when configured. Tests read what it received.
 */
export async function startFakeSmtp(options: FakeSmtpOptions = {}): Promise<FakeSmtp> {
  const received: ReceivedMail[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const context = options.tls ? createSecureContext({ key: options.tls.key, cert: options.tls.cert }) : undefined;
  const onSocket = (socket: Socket) => session(socket, options, received, context, options.implicitTls === true);
  const server: Server = options.implicitTls
    ? createTlsServer({ key: options.tls!.key, cert: options.tls!.cert }, onSocket)
    : createServer(onSocket);
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    connections++;
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const userinfo = options.credentials
    ? `${encodeURIComponent(options.credentials.user)}:${encodeURIComponent(options.credentials.password)}@`
    : "";
  return {
    url: `${options.implicitTls ? "smtps" : "smtp"}://${userinfo}127.0.0.1:${port}`,
    port,
    received,
    get connections() {
      return connections;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function session(
  plain: Socket,
  options: FakeSmtpOptions,
  received: ReceivedMail[],
  context: ReturnType<typeof createSecureContext> | undefined,
  implicitTls: boolean,
): void {
  let socket: Socket = plain;
  let secure = implicitTls;
  const reply = (line: string) => socket.write(`${line}\r\n`);
  let buffer = "";
  // Bytes to text per connection: a character split between two reads still decodes whole.
  let decoder = new TextDecoder();
  let greeted = false;
  let authed: string | null = null;
  // AUTH LOGIN asks for the user, then the password, each on a line of its own.
  let login: { user?: string } | null = null;
  let envelope: { from: string; to: string[] } | null = null;
  let data: string[] | null = null;
  reply("220 fake-smtp ESMTP ready");

  const checkCredentials = (user: string | undefined, password: string | undefined) => {
    if (!options.credentials || user !== options.credentials.user || password !== options.credentials.password)
      return void reply("535 authentication failed");
    authed = user!;
    reply("235 authenticated");
  };

  const command = (line: string) => {
    const verb = line.slice(0, 4).toUpperCase();
    if (verb === "EHLO") {
      greeted = true;
      const starttls = context && !secure ? ["STARTTLS"] : [];
      const lines = [`fake-smtp greets ${line.slice(5)}`, "SIZE 10240000", "8BITMIME", ...starttls, "AUTH PLAIN LOGIN"];
      return void reply(lines.map((l, i) => `250${i === lines.length - 1 ? " " : "-"}${l}`).join("\r\n"));
    }
    if (verb === "HELO") {
      greeted = true;
      return void reply("250 fake-smtp");
    }
    if (verb === "QUIT") {
      reply("221 bye");
      return void socket.end();
    }
    if (verb === "RSET") {
      envelope = null;
      return void reply("250 reset");
    }
    if (verb === "NOOP") return void reply("250 ok");
    if (!greeted) return void reply("503 send EHLO first");
    if (line.toUpperCase() === "STARTTLS") {
      if (!context || secure) return void reply("502 STARTTLS not offered");
      reply("220 go ahead");
      // RFC 3207: the session starts over on the secured connection (a new EHLO, no earlier state).
      socket.removeAllListeners("data");
      socket = new TLSSocket(plain, { isServer: true, secureContext: context });
      socket.on("error", () => plain.destroy());
      socket.on("data", onData);
      secure = true;
      greeted = false;
      authed = null;
      envelope = null;
      buffer = "";
      decoder = new TextDecoder();
      return;
    }
    if (verb === "AUTH") {
      if (authed) return void reply("503 already authenticated");
      const [, mech, payload] = line.split(" ");
      if (mech?.toUpperCase() === "LOGIN") {
        login = {};
        return void reply(
          payload
            ? ((login = { user: Buffer.from(payload, "base64").toString("utf8") }), "334 UGFzc3dvcmQ6")
            : "334 VXNlcm5hbWU6",
        );
      }
      if (mech?.toUpperCase() !== "PLAIN" || !payload)
        return void reply("504 AUTH PLAIN with an initial response, or AUTH LOGIN");
      const [, user, password] = Buffer.from(payload, "base64").toString("utf8").split("\0");
      return checkCredentials(user, password);
    }
    if (verb === "MAIL") {
      if (options.credentials && !authed) return void reply("530 authentication required");
      const from = /^MAIL FROM:<([^>]*)>/i.exec(line)?.[1];
      if (from === undefined) return void reply("501 syntax: MAIL FROM:<address>");
      envelope = { from, to: [] };
      return void reply("250 sender ok");
    }
    if (verb === "RCPT") {
      if (!envelope) return void reply("503 MAIL first");
      const to = /^RCPT TO:<([^>]+)>/i.exec(line)?.[1];
      if (!to) return void reply("501 syntax: RCPT TO:<address>");
      if (options.refuse?.(to)) return void reply("550 no such mailbox");
      if (options.defer?.(to)) return void reply("450 mailbox busy, try again later");
      envelope.to.push(to);
      return void reply("250 recipient ok");
    }
    if (line.toUpperCase() === "DATA") {
      if (!envelope || envelope.to.length === 0) return void reply("503 RCPT first");
      data = [];
      return void reply("354 end with <CRLF>.<CRLF>");
    }
    reply("500 unknown command");
  };

  const onData = (chunk: Buffer | string) => {
    buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\r\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (Buffer.byteLength(line) + 2 > MAX_LINE) {
        reply("500 line too long");
        continue;
      }
      if (data) {
        if (line === ".") {
          received.push({ ...envelope!, data: data.join("\r\n"), auth: authed, secure });
          data = null;
          envelope = null;
          reply("250 queued");
        } else data.push(line.startsWith(".") ? line.slice(1) : line);
        continue;
      }
      if (login) {
        const value = Buffer.from(line, "base64").toString("utf8");
        if (login.user === undefined) {
          login.user = value;
          reply("334 UGFzc3dvcmQ6");
        } else {
          const { user } = login;
          login = null;
          checkCredentials(user, value);
        }
        continue;
      }
      command(line);
    }
  };
  socket.on("data", onData);
  socket.on("error", () => socket.destroy());
}

/** Splits a received message into headers and the decoded text body. */
export function parseMail(data: string): { headers: Record<string, string>; body: string } {
  const split = data.indexOf("\r\n\r\n");
  const headers: Record<string, string> = {};
  for (const line of data
    .slice(0, split)
    .replace(/\r\n[ \t]+/g, " ")
    .split("\r\n")) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const raw = data.slice(split + 4);
  const body =
    headers["content-transfer-encoding"] === "base64"
      ? Buffer.from(raw.replace(/\r\n/g, ""), "base64").toString("utf8")
      : raw.replace(/\r\n/g, "\n");
  return { headers, body };
}

/** Decodes RFC 2047 encoded words (B encoding) in a header value. */
export function decodeHeader(value: string): string {
  return value.replace(/=\?UTF-8\?B\?([^?]*)\?=\s*/gi, (_, b64: string) => Buffer.from(b64, "base64").toString("utf8"));
}
