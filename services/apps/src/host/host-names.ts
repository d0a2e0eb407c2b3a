// What a Host header names under the apps domain. Every site Hatch serves there is ONE label below it, so the one
// certificate for `*.<apps domain>` covers them all (no certificate per app or per version): an app's address
// (`<address>.<apps domain>`) and a non-current version's preview (`v<N>--<address>.<apps domain>`, preview.ts).
// The two never meet: no address contains `--` (publish/commit.ts addressBase makes every address, and it joins words
// with one hyphen), so a label with `--` is never an app's, and `v<N>--` is read only in front of a real address.

/** A DNS name is at most 253 characters; with a port and a dot this is the longest Host worth reading. */
const MAX_HOST_LENGTH = 261;
/** name, a trailing dot, port, a trailing dot (after the port, as `x.localhost:3001.` arrives). No IPv6 literals. */
const HOST_PARTS = /^([a-z0-9.-]+?)(\.)?(?::(\d{1,5}))?(\.)?$/;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** `v<N>--<address>`: the version without leading zeros (one spelling per version), then the address. */
const PREVIEW_LABEL = /^v([1-9]\d{0,8})--(.+)$/;

/** A version preview's address: the app and its version. */
export interface Preview {
  address: string;
  version: number;
}

/** An app address as a Host label: a DNS label without `--` (the form kept for hosts derived from an address). */
export function isAddressLabel(label: string): boolean {
  return LABEL.test(label) && !label.includes("--");
}

/**
 * The label a Host names below the apps domain: "" for the bare apps domain, the label of `<label>.<apps domain>`,
 * null for anything else (other names, deeper names, IP literals, empty labels, odd ports, over-long values). Case does
 * not matter and one trailing dot names the same host (`a.example.` is `a.example`). The port is ignored when the apps
 * domain has none (a proxy in front may keep it).
 */
export function labelOfHost(host: string | null, appsDomain: string): string | null {
  if (!host || host.length > MAX_HOST_LENGTH) return null;
  const given = HOST_PARTS.exec(host.toLowerCase());
  const domain = HOST_PARTS.exec(appsDomain.toLowerCase());
  if (!given || !domain || (given[2] && given[4])) return null;
  const [, name = "", , port] = given;
  const [, domainName = "", , domainPort] = domain;
  if (domainPort !== undefined && port !== domainPort) return null;
  if (name.split(".").includes("")) return null;
  if (name === domainName) return "";
  if (!name.endsWith(`.${domainName}`)) return null;
  const label = name.slice(0, -(domainName.length + 1));
  return LABEL.test(label) ? label : null;
}

/** Which app a Host names: "" for the bare apps domain, an address for `<address>.<apps domain>`, else null. */
export function addressOfHost(host: string | null, appsDomain: string): string | null {
  const label = labelOfHost(host, appsDomain);
  if (label === null || label === "") return label;
  return isAddressLabel(label) ? label : null;
}

/** The preview a Host names (`v<N>--<address>.<apps domain>`), else null. */
export function previewOfHost(host: string | null, appsDomain: string): Preview | null {
  const label = labelOfHost(host, appsDomain);
  return label ? previewOfLabel(label) : null;
}

function previewOfLabel(label: string): Preview | null {
  const match = PREVIEW_LABEL.exec(label);
  if (!match || !isAddressLabel(match[2]!)) return null;
  return { address: match[2]!, version: Number(match[1]) };
}

/**
 * The Host label of a version's preview, or null when it would be longer than a DNS label may be (63 characters: an
 * address near the longest with a version in the millions); such a version has no preview.
 */
export function previewLabel(address: string, version: number): string | null {
  const label = `v${version}--${address}`;
  const read = label.length <= 63 ? previewOfLabel(label) : null;
  return read?.address === address && read.version === version ? label : null;
}
