import { connect as netConnect, isIP, type Socket } from "node:net";
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from "node:tls";
import type { SmtpSettings } from "../config.ts";

// A small SMTP client (RFC 5321) over node:net and node:tls: EHLO, STARTTLS when offered, AUTH PLAIN or
// LOGIN, then one MAIL/RCPT/DATA transaction per message on one connection. Enough to hand mail to a
// submission server; no pipelining, no DSN.

export interface OutgoingMail {
  id: string;
  from: string;
  to: string;
  subject: string;
  body: string;
}

export type SendOutcome = { id: string; ok: true } | { id: string; ok: false; permanent: boolean; error: string };

export interface SmtpOptions {
  /** Longest wait for one server reply. */
  replyTimeoutMs?: number;
  /** Extra TLS settings (a test's own CA). */
  tls?: ConnectionOptions;
}

/** A reply the server sent that was not the one expected. 5xx means the same message will never pass. */
export class SmtpReplyError extends Error {
  constructor(
    readonly code: number,
    text: string,
  ) {
    super(`SMTP ${code}: ${text}`);
    this.name = "SmtpReplyError";
  }
  get permanent(): boolean {
    return this.code >= 500;
  }
}

interface Reply {
  code: number;
  lines: string[];
}

class SmtpSession {
  private buffer = "";
  private lines: string[] = [];
  private replies: Reply[] = [];
  private waiter: { resolve: (r: Reply) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;

  constructor(
    private socket: Socket | TLSSocket,
    private readonly timeoutMs: number,
  ) {
    this.attach(socket);
  }

  private attach(socket: Socket | TLSSocket): void {
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.receive(chunk));
    socket.on("error", (error) => this.fail(error));
    socket.on("close", () => this.fail(new Error("the SMTP server closed the connection")));
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf("\r\n")) >= 0) {
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      this.lines.push(line.slice(4));
      // "250-..." continues a reply; "250 ..." (or a bare code) ends it.
      if (/^\d{3}(?: |$)/.test(line)) {
        const reply = { code: Number(line.slice(0, 3)), lines: this.lines };
        this.lines = [];
        if (this.waiter) {
          this.waiter.resolve(reply);
          this.waiter = null;
        } else this.replies.push(reply);
      }
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.waiter?.reject(this.failure);
    this.waiter = null;
  }

  read(): Promise<Reply> {
    const queued = this.replies.shift();
    if (queued) return Promise.resolve(queued);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new Error(`the SMTP server did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      this.waiter = {
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      };
    });
  }

  async expect(codes: number[]): Promise<Reply> {
    const reply = await this.read();
    if (!codes.includes(reply.code)) throw new SmtpReplyError(reply.code, reply.lines.join(" "));
    return reply;
  }

  async command(line: string, codes: number[]): Promise<Reply> {
    this.socket.write(`${line}\r\n`);
    return this.expect(codes);
  }

  write(data: string): void {
    this.socket.write(data);
  }

  /** Replaces the plain socket by a TLS one over it (STARTTLS). */
  async upgrade(servername: string, tls: ConnectionOptions | undefined): Promise<void> {
    this.socket.removeAllListeners("data").removeAllListeners("error").removeAllListeners("close");
    const secure = tlsConnect({ ...tls, socket: this.socket, servername: isIP(servername) ? undefined : servername });
    await new Promise<void>((resolve, reject) => {
      secure.once("secureConnect", resolve);
      secure.once("error", reject);
    });
    this.socket = secure;
    this.attach(secure);
  }

  close(): void {
    this.socket.destroy();
  }
}

function open(settings: SmtpSettings, tls: ConnectionOptions | undefined): Promise<Socket | TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = settings.implicitTls
      ? tlsConnect({ ...tls, host: settings.host, port: settings.port, servername: isIP(settings.host) ? undefined : settings.host }, () => resolve(socket))
      : netConnect({ host: settings.host, port: settings.port }, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** The one exemption from "no password without TLS": a server on this machine, named as such. */
const isLoopback = (host: string) => host === "localhost" || host === "127.0.0.1" || host === "::1";

/** Connects, greets, secures and authenticates; returns the session and the server's extensions. */
async function handshake(settings: SmtpSettings, options: SmtpOptions): Promise<{ session: SmtpSession; secure: boolean }> {
  const session = new SmtpSession(await open(settings, options.tls), options.replyTimeoutMs ?? 30_000);
  let secure = settings.implicitTls;
  try {
    await session.expect([220]);
    let ehlo = await session.command(`EHLO ${settings.heloName}`, [250]);
    if (!secure && ehlo.lines.some((l) => /^STARTTLS\b/i.test(l))) {
      await session.command("STARTTLS", [220]);
      await session.upgrade(settings.host, options.tls);
      secure = true;
      ehlo = await session.command(`EHLO ${settings.heloName}`, [250]);
    }
    if (settings.user !== undefined) {
      // A password never crosses the network in the clear, except to a server on this machine.
      if (!secure && !isLoopback(settings.host)) throw new Error("the SMTP server offers no TLS, so Hatch will not send it the password");
      await authenticate(session, ehlo.lines, settings.user, settings.password ?? "");
    }
    return { session, secure };
  } catch (error) {
    session.close();
    throw error;
  }
}

async function authenticate(session: SmtpSession, extensions: string[], user: string, password: string): Promise<void> {
  const auth = extensions.find((l) => /^AUTH\b/i.test(l))?.toUpperCase().split(/\s+/) ?? [];
  if (auth.includes("PLAIN")) {
    await session.command(`AUTH PLAIN ${Buffer.from(`\0${user}\0${password}`).toString("base64")}`, [235]);
  } else if (auth.includes("LOGIN")) {
    await session.command("AUTH LOGIN", [334]);
    await session.command(Buffer.from(user).toString("base64"), [334]);
    await session.command(Buffer.from(password).toString("base64"), [235]);
  } else {
    throw new Error("the SMTP server offers neither AUTH PLAIN nor AUTH LOGIN");
  }
}

/** The bare address of `Name <addr>` or `addr`. */
export function addressOf(mailbox: string): string {
  return /<([^<>]+)>\s*$/.exec(mailbox)?.[1] ?? mailbox.trim();
}

/**
 * Sends each message in its own transaction over one connection. A connection or handshake failure rejects
 * (every message is retried later); a refused message is reported in its outcome and the rest go on.
 */
export async function sendMails(settings: SmtpSettings, messages: OutgoingMail[], options: SmtpOptions = {}): Promise<SendOutcome[]> {
  const { session } = await handshake(settings, options);
  const outcomes: SendOutcome[] = [];
  try {
    for (const message of messages) {
      try {
        await session.command(`MAIL FROM:<${addressOf(message.from)}>`, [250]);
        await session.command(`RCPT TO:<${addressOf(message.to)}>`, [250, 251]);
        await session.command("DATA", [354]);
        session.write(dotStuff(formatMessage(message, settings.heloName)));
        await session.expect([250]);
        outcomes.push({ id: message.id, ok: true });
      } catch (error) {
        if (!(error instanceof SmtpReplyError)) throw error;
        outcomes.push({ id: message.id, ok: false, permanent: error.permanent, error: error.message });
        await session.command("RSET", [250]);
      }
    }
    await session.command("QUIT", [221]).catch(() => undefined);
  } finally {
    session.close();
  }
  return outcomes;
}

/** The message as RFC 5322 text: headers, a blank line, the body (base64 unless it is plain short ASCII). */
export function formatMessage(message: OutgoingMail, domain: string, now = new Date()): string {
  const clean = (v: string) => v.replace(/[\r\n]+/g, " ");
  const ascii = /^[\x20-\x7e\r\n\t]*$/.test(message.body) && message.body.split(/\r?\n/).every((l) => l.length <= 998);
  const body = message.body.replace(/\r?\n/g, "\r\n");
  const headers = [
    `From: ${clean(message.from)}`,
    `To: ${clean(message.to)}`,
    `Subject: ${encodeHeader(clean(message.subject))}`,
    `Date: ${now.toUTCString()}`,
    `Message-ID: <${message.id}@${domain}>`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    `Content-Transfer-Encoding: ${ascii ? "7bit" : "base64"}`,
  ];
  const encoded = ascii ? body : (Buffer.from(body, "utf8").toString("base64").match(/.{1,76}/g) ?? []).join("\r\n");
  return `${headers.join("\r\n")}\r\n\r\n${encoded}`;
}

/** RFC 2047 encoded-word for a header value that is not plain ASCII. */
function encodeHeader(value: string): string {
  if (/^[\x20-\x7e]*$/.test(value)) return value;
  // Encoded words stay within 75 characters (RFC 2047 §2), so a long value becomes several, folded; a
  // character is never split between two.
  const words: string[] = [];
  let chunk = "";
  for (const char of value) {
    if (Buffer.byteLength(chunk + char) > 45) {
      words.push(chunk);
      chunk = "";
    }
    chunk += char;
  }
  words.push(chunk);
  return words.map((w) => `=?UTF-8?B?${Buffer.from(w, "utf8").toString("base64")}?=`).join("\r\n ");
}

/** DATA's transparency (RFC 5321 §4.5.2): a line starting with a dot gets another; ends with CRLF.CRLF. */
export function dotStuff(text: string): string {
  const stuffed = text.split("\r\n").map((line) => (line.startsWith(".") ? `.${line}` : line)).join("\r\n");
  return `${stuffed}\r\n.\r\n`;
}
