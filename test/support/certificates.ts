import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface Certificate {
  keyPath: string;
  certPath: string;
  key: string;
  cert: string;
}

/**
 * A throwaway self-signed certificate (EC P-256, valid a day) made with openssl: `<name>.key` and `<name>.pem` in `dir`,
 * with their PEM texts. `altNames` as openssl takes them: `DNS:localhost`, `IP:127.0.0.1`, `DNS:*.apps.test`.
 */
export function selfSignedCertificate(dir: string, name: string, commonName: string, altNames: string[]): Certificate {
  const keyPath = join(dir, `${name}.key`);
  const certPath = join(dir, `${name}.pem`);
  const made = spawnSync("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-days",
    "1",
    "-subj",
    `/CN=${commonName}`,
    "-addext",
    `subjectAltName=${altNames.join(",")}`,
    "-keyout",
    keyPath,
    "-out",
    certPath,
  ]);
  if (made.status !== 0) throw new Error(`openssl failed: ${String(made.stderr)}`);
  return { keyPath, certPath, key: readFileSync(keyPath, "utf8"), cert: readFileSync(certPath, "utf8") };
}
