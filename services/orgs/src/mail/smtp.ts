import type { ConnectionOptions } from "node:tls";
import { createTransport } from "nodemailer";
import type { SmtpSettings } from "../config.ts";

// Hands mail to a submission server through nodemailer's pooled SMTP transport: it keeps a few connections
// open across passes, upgrades with STARTTLS when offered (smtp://) or speaks TLS from the first byte
// (smtps://), authenticates, dot-stuffs and MIME-encodes. This file only maps Hatch's settings onto it and
// its errors onto "retry later" or "give up".

export interface OutgoingMail {
  id: string;
  from: string;
  to: string;
  subject: string;
  body: string;
}

export type SendOutcome = { id: string; ok: true } | { id: string; ok: false; permanent: boolean; error: string };

export interface SmtpOptions {
  /** Longest wait for the greeting and for one server reply (also how long an idle pooled connection lives). */
  replyTimeoutMs?: number;
  /** Connections the pool may open at once. */
  maxConnections?: number;
  /** Extra TLS settings (a test's own CA). */
  tls?: ConnectionOptions;
}

export interface SmtpSender {
  /** Sends each message in its own transaction; never rejects: every message gets an outcome. */
  send(messages: OutgoingMail[]): Promise<SendOutcome[]>;
  /** Closes the pooled connections. */
  close(): void;
}

/** The one exemption from "no password without TLS": a server on this machine, named as such. */
const isLoopback = (host: string) => host === "localhost" || host === "127.0.0.1" || host === "::1";

/** Failures of the message itself (its envelope or content), as opposed to the connection or the login. */
const MESSAGE_ERRORS = new Set(["EENVELOPE", "EMESSAGE", "EMAXRECIPIENTS"]);

interface NodemailerError {
  code?: string;
  responseCode?: number;
  response?: string;
  message?: string;
}

export function createSmtpSender(settings: SmtpSettings, options: SmtpOptions = {}): SmtpSender {
  const timeout = options.replyTimeoutMs ?? 30_000;
  // A password never crosses the network in the clear, except to a server on this machine: with requireTLS
  // nodemailer insists on STARTTLS and fails before AUTH when the server cannot do it.
  const requireTLS = settings.user !== undefined && !settings.implicitTls && !isLoopback(settings.host);
  const transport = createTransport({
    pool: true,
    maxConnections: options.maxConnections ?? 3,
    maxMessages: 100,
    host: settings.host,
    port: settings.port,
    secure: settings.implicitTls,
    requireTLS,
    name: settings.heloName,
    auth: settings.user !== undefined ? { user: settings.user, pass: settings.password ?? "" } : undefined,
    tls: options.tls,
    // Every wait is bounded well inside the mailer's claim on a batch (2 min), so a hung server cannot
    // make another instance send the same mail again.
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    // Its logs would carry envelopes and, at debug level, message bodies (live links): none.
    logger: false,
    debug: false,
    // Mail here is plain text built by Hatch: nothing it sends should read a file or fetch a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
  });

  const describe = (error: unknown): { permanent: boolean; error: string } => {
    const e = (error ?? {}) as NodemailerError;
    if (e.code === "ETLS" && requireTLS) {
      return {
        permanent: false,
        error:
          "the SMTP server offers no working STARTTLS, so Hatch will not send it the password (use smtps:// or a server with TLS)",
      };
    }
    const reply = e.responseCode
      ? `SMTP ${e.responseCode}: ${oneLine(e.response ?? "")}`
      : oneLine(e.message ?? String(error));
    if (e.code && MESSAGE_ERRORS.has(e.code))
      return { permanent: e.responseCode === undefined || e.responseCode >= 500, error: reply };
    // The connection, TLS or login failed: not this message's fault, so it is retried (a wrong password
    // shows in the reason, and an operator's fix lets the mail through).
    const what = e.code === "EAUTH" ? "SMTP login failed" : "SMTP connection failed";
    return { permanent: false, error: `${what}: ${reply}` };
  };

  return {
    async send(messages) {
      return Promise.all(
        messages.map(async (message): Promise<SendOutcome> => {
          try {
            await transport.sendMail({
              from: clean(message.from),
              to: clean(message.to),
              subject: clean(message.subject),
              // Text travels in canonical form: CRLF line breaks, inside the base64 too.
              text: message.body.replace(/\r?\n/g, "\r\n"),
              textEncoding: "base64",
              messageId: `<${message.id}@${settings.heloName}>`,
            });
            return { id: message.id, ok: true };
          } catch (error) {
            return { id: message.id, ok: false, ...describe(error) };
          }
        }),
      );
    },
    close() {
      transport.close();
    },
  };
}

/** Header values on one line: a CR or LF in a subject or address would start a header of its own. */
const clean = (value: string) => value.replace(/[\r\n]+/g, " ");

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, 300);
