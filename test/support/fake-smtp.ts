import { createServer, type Server, type Socket } from "node:net";

/** A message as the fake server received it: the envelope and the raw DATA, un-dot-stuffed. */
export interface ReceivedMail {
  from: string;
  to: string[];
  data: string;
  auth: string | null;
}

export interface FakeSmtpOptions {
  /** Require AUTH PLAIN with this user and password before MAIL. */
  credentials?: { user: string; password: string };
  /** Recipients refused with a permanent 550. */
  refuse?: (recipient: string) => boolean;
  /** Listen on this port (default: any free one). */
  port?: number;
}

export interface FakeSmtp {
  url: string;
  port: number;
  received: ReceivedMail[];
  close(): Promise<void>;
}

/** RFC 5321 limit on a line, CRLF included. */
const MAX_LINE = 1000;

/**
 * A local SMTP server that speaks the protocol the way a submission server does (EHLO with extensions,
 * AUTH PLAIN, MAIL/RCPT/DATA with dot-transparency, RSET, QUIT) and enforces its rules: commands in order,
 * lines of at most 1000 octets, authentication when configured. Tests read what it received.
 */
export async function startFakeSmtp(options: FakeSmtpOptions = {}): Promise<FakeSmtp> {
  const received: ReceivedMail[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => session(socket, options, received));
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const userinfo = options.credentials ? `${encodeURIComponent(options.credentials.user)}:${encodeURIComponent(options.credentials.password)}@` : "";
  return {
    url: `smtp://${userinfo}127.0.0.1:${port}`,
    port,
    received,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function session(socket: Socket, options: FakeSmtpOptions, received: ReceivedMail[]): void {
  const reply = (line: string) => socket.write(`${line}\r\n`);
  let buffer = "";
  let greeted = false;
  let authed: string | null = null;
  let envelope: { from: string; to: string[] } | null = null;
  let data: string[] | null = null;
  reply("220 fake-smtp ESMTP ready");

  const command = (line: string) => {
    const verb = line.slice(0, 4).toUpperCase();
    if (verb === "EHLO") {
      greeted = true;
      return void reply(`250-fake-smtp greets ${line.slice(5)}\r\n250-SIZE 10240000\r\n250-8BITMIME\r\n250 AUTH PLAIN LOGIN`);
    }
    if (verb === "QUIT") {
      reply("221 bye");
      return void socket.end();
    }
    if (verb === "RSET") {
      envelope = null;
      return void reply("250 reset");
    }
    if (!greeted) return void reply("503 send EHLO first");
    if (verb === "AUTH") {
      const [, mech, payload] = line.split(" ");
      if (mech?.toUpperCase() !== "PLAIN" || !payload) return void reply("504 only AUTH PLAIN with an initial response here");
      const [, user, password] = Buffer.from(payload, "base64").toString("utf8").split("\0");
      if (!options.credentials || user !== options.credentials.user || password !== options.credentials.password) return void reply("535 authentication failed");
      authed = user!;
      return void reply("235 authenticated");
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

  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    buffer += chunk;
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
          received.push({ ...envelope!, data: data.join("\r\n"), auth: authed });
          data = null;
          envelope = null;
          reply("250 queued");
        } else data.push(line.startsWith(".") ? line.slice(1) : line);
        continue;
      }
      command(line);
    }
  });
  socket.on("error", () => socket.destroy());
}

/** Splits a received message into headers and the decoded text body. */
export function parseMail(data: string): { headers: Record<string, string>; body: string } {
  const split = data.indexOf("\r\n\r\n");
  const headers: Record<string, string> = {};
  for (const line of data.slice(0, split).replace(/\r\n[ \t]+/g, " ").split("\r\n")) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const raw = data.slice(split + 4);
  const body = headers["content-transfer-encoding"] === "base64" ? Buffer.from(raw.replace(/\r\n/g, ""), "base64").toString("utf8") : raw.replace(/\r\n/g, "\n");
  return { headers, body };
}

/** Decodes RFC 2047 encoded words (B encoding) in a header value. */
export function decodeHeader(value: string): string {
  return value.replace(/=\?UTF-8\?B\?([^?]*)\?=\s*/gi, (_, b64: string) => Buffer.from(b64, "base64").toString("utf8"));
}
