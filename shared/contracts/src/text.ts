import { z } from "zod";

// One rule for free text that people and AIs type (names, reasons, titles): no control characters. A NUL byte
// cannot be stored by Postgres, and other control and direction-override characters make a log line or a page
// say something else than what was stored. Checked at the edge (contracts, forms) and again in each service.

/** C0 and C1 controls, DEL, and the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
/** The same, but tabs and line breaks are allowed (text that may span lines). */
const CONTROL_IN_BLOCK = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

export const CONTROL_CHARS_MESSAGE = "must not contain control characters";

/** True when the value holds a character that is not allowed in a single-line field. */
export function hasControlChars(value: string, options: { multiline?: boolean } = {}): boolean {
  return (options.multiline ? CONTROL_IN_BLOCK : CONTROL).test(value);
}

/** Removes control characters (for values we show but do not refuse, such as a client's self-declared name). */
export function stripControlChars(value: string): string {
  return value.replace(CONTROL_ALL, "");
}

/** CONTROL, every match (String.replace with a global pattern starts at 0 each time, so one instance serves all). */
const CONTROL_ALL = new RegExp(CONTROL.source, "g");

/**
 * A single-line text field: trimmed, at least one visible character, at most `max`, no control characters.
 * Use for every name, title and short reason in a contract or a form.
 */
export function plainText(max: number) {
  return z
    .string()
    .trim()
    .min(1, { error: "must not be empty or only spaces" })
    .max(max)
    .refine((value) => !hasControlChars(value), { error: CONTROL_CHARS_MESSAGE });
}

/** Text that may span lines (a message, a longer reason): tabs and line breaks allowed, other controls not. */
export function textBlock(max: number) {
  return z
    .string()
    .max(max)
    .refine((value) => !hasControlChars(value, { multiline: true }), { error: CONTROL_CHARS_MESSAGE });
}

/** Irregular plurals of the nouns answers count. */
const PLURALS: Record<string, string> = { person: "people", entry: "entries", invitation: "invitations" };

/**
 * A count with its noun in the right number: plural(1, "person") is "1 person", plural(3, "person") "3 people",
 * plural(2, "unique viewer") "2 unique viewers". Every answer that counts something says it through this.
 */
export function plural(count: number, noun: string, many?: string): string {
  return `${count} ${count === 1 ? noun : (many ?? PLURALS[noun] ?? `${noun}s`)}`;
}

/** Bytes in words: `3 MB`, `64 KB`, `1 GB`, `12 bytes`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 * 1024 && bytes % (1024 * 1024 * 1024) === 0) return `${bytes / (1024 * 1024 * 1024)} GB`;
  if (bytes >= 1024 * 1024) return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}
