import { readFileSync } from "node:fs";
import { connect, rootCertificates, type PeerCertificate } from "node:tls";

// The certificate stage ends when a TLS connection to the edge for a hostname presents a valid certificate for it.
// The connection itself is what makes the edge (Caddy's on-demand TLS) obtain one, after asking us whether it may.

export type CertificateCheck = { ok: true; notAfter: Date; issuer: string } | { ok: false; problem: string };

export interface CertificateCheckOptions {
  address: { host: string; port: number };
  /** Extra trusted roots (PEM), e.g. a test CA; the system's roots are always trusted. */
  caPem?: string | null;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Reads EDGE_CA_FILE once. */
export function loadExtraRoots(file: string | null): string | null {
  return file ? readFileSync(file, "utf8") : null;
}

/** Connects to the edge with SNI `hostname` and checks the certificate it presents (chain, name, dates). */
export function checkCertificate(hostname: string, options: CertificateCheckOptions): Promise<CertificateCheck> {
  const ca = options.caPem ? [...rootCertificates, options.caPem] : undefined;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: CertificateCheck) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(result);
    };
    const socket = connect({
      host: options.address.host,
      port: options.address.port,
      servername: hostname,
      ca,
      rejectUnauthorized: false,
      ALPNProtocols: ["http/1.1"],
    });
    const timer = setTimeout(
      () =>
        finish({
          ok: false,
          problem: "the edge did not complete a TLS handshake in time; the certificate may still be on its way",
        }),
      options.timeoutMs ?? 15_000,
    );
    const onAbort = () => finish({ ok: false, problem: "the check was stopped" });
    options.signal?.addEventListener("abort", onAbort);
    socket.once("secureConnect", () => {
      const peer: PeerCertificate = socket.getPeerCertificate();
      if (!socket.authorized)
        return finish({
          ok: false,
          problem: `the edge's certificate for ${hostname} is not trusted yet (${String(socket.authorizationError)})`,
        });
      const notAfter = new Date(peer.valid_to);
      const issuer = peer.issuer?.CN ?? peer.issuer?.O ?? "unknown issuer";
      finish({ ok: true, notAfter, issuer: Array.isArray(issuer) ? issuer.join(", ") : issuer });
    });
    socket.once("error", (error: NodeJS.ErrnoException) =>
      finish({
        ok: false,
        problem: `the edge refused the TLS connection for ${hostname} (${error.code ?? error.message})`,
      }),
    );
  });
}
