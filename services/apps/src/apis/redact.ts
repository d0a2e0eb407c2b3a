// What a declared API answers goes back to a page or to server code (which may log it, or serve it on a public page),
// so every form of the secret an API commonly echoes is replaced with "[secret]" first: the value as it is, URL- and
// form-encoded, JSON-escaped, hex, and base64 / base64url, standing alone or inside a longer base64 text (as in a
// Basic authorization header). What this cannot catch is in SECURITY.md.

export const REDACTED = "[secret]";

/** A derived form shorter than this is not looked for (it would match unrelated text); the value itself always is. */
const MIN_FORM_CHARS = 8;

const lowerEscapes = (text: string) => text.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());

/** JSON's escapes of a string's content, with every non-ASCII code unit as \uXXXX (hex in the given case). */
function asciiJson(json: string, upper: boolean): string {
  return json.replace(/[\u0080-\uffff]/g, (unit) => {
    const hex = unit.charCodeAt(0).toString(16).padStart(4, "0");
    return `\\u${upper ? hex.toUpperCase() : hex}`;
  });
}

/**
 * The base64 of the value alone (padded and not), and the characters that depend on the value only when it sits at
 * each of the three byte offsets inside a longer base64 text; each also in the base64url alphabet.
 */
function base64Forms(bytes: Buffer): string[] {
  const standard = bytes.toString("base64");
  const out = [standard, standard.replace(/=+$/, "")];
  for (const offset of [0, 1, 2]) {
    const shifted = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
    // A character holds bits [6i, 6i+6); the value's bits are [8·offset, 8·(offset+length)).
    out.push(shifted.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6)));
  }
  return [...out, ...out.map((form) => form.replace(/\+/g, "-").replace(/\//g, "_"))];
}

/** The forms a secret may come back in, longest first (a longer form is replaced before a part of it could be). */
export function formsOf(secret: string): string[] {
  if (secret.length === 0) return [];
  const bytes = Buffer.from(secret, "utf8");
  const uri = encodeURIComponent(secret);
  const form = new URLSearchParams({ v: secret }).toString().slice(2);
  const json = JSON.stringify(secret).slice(1, -1);
  const jsons = [json, asciiJson(json, false), asciiJson(json, true)];
  const derived = [
    uri,
    lowerEscapes(uri),
    form,
    lowerEscapes(form),
    ...jsons,
    ...jsons.map((text) => text.replace(/\//g, "\\/")),
    bytes.toString("hex"),
    bytes.toString("hex").toUpperCase(),
    ...base64Forms(bytes),
  ].filter((text) => text.length >= MIN_FORM_CHARS);
  return [...new Set([secret, ...derived])].sort((a, b) => b.length - a.length);
}

/** Replaces every occurrence of the forms (formsOf, computed once per call) in a header value. */
export function redactText(text: string, forms: readonly string[]): string {
  return forms.reduce((out, form) => out.split(form).join(REDACTED), text);
}

/** Replaces every occurrence of the forms (formsOf) in a body of any type. */
export function redact(body: Uint8Array, forms: readonly string[]): Uint8Array {
  let out = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const mark = Buffer.from(REDACTED);
  for (const form of forms) {
    const needle = Buffer.from(form, "utf8");
    if (out.indexOf(needle) === -1) continue;
    const parts: Buffer[] = [];
    let from = 0;
    for (let at = out.indexOf(needle, from); at !== -1; at = out.indexOf(needle, from)) {
      parts.push(out.subarray(from, at), mark);
      from = at + needle.length;
    }
    parts.push(out.subarray(from));
    out = Buffer.concat(parts);
  }
  return out;
}
