import { z } from "zod";
import { plainText } from "../text.ts";

// Building blocks shared by several tool contracts. Outputs stay plain JSON (they travel as MCP
// structuredContent): no dates, transforms or lazy schemas; times are ISO 8601 strings.

/** An app's address: the single DNS label in `<address>.<APPS_DOMAIN>`. Never reused after a delete. */
export const AppAddressSchema = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/, {
    error: "An app address is lowercase letters, digits and inner hyphens, e.g. my-todo",
  })
  .describe("The app's address, e.g. my-todo for https://my-todo.<apps domain>; list_tools shows every address");

/**
 * How a tool's input names an app: its address, its URL or its exact name (the apps service resolves it to the address
 * before the tool runs). Outputs always carry the address (AppAddressSchema).
 */
export const AppRefSchema = plainText(300).describe(
  "The app: its address (e.g. my-todo), its URL or its exact name; list_tools shows them",
);

// One email rule for sign-up, sign-in and every tool that takes an email: plain ASCII (an international domain in
// its xn-- form), a dot-atom before the @ and a domain name after it. Lookalike letters from other alphabets, zero-width
// and control characters cannot sneak into an address that then matches an invitation or a share by eye.
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
const LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const TLD = "(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})";
/** The whole rule as one pattern (also the JSON Schema `pattern` clients see). */
export const EMAIL_PATTERN = new RegExp(`^(?=[^@]{1,64}@)${ATEXT}+(?:\\.${ATEXT}+)*@(?:${LABEL}\\.)+${TLD}$`);
export const EMAIL_MAX_LENGTH = 254;
/** Zero-width, format (bidi, soft hyphen, tags), other invisible fillers and control characters. */
const INVISIBLE =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0]|[\u{e0100}-\u{e01ef}]/u;

/** Why `email` is not an address Hatch accepts, in words a person or an AI can act on; null when it is fine. */
export function emailProblem(email: string): string | null {
  if (INVISIBLE.test(email)) {
    return "The email address contains an invisible or control character (often copied along with it). Type the address again.";
  }
  if (/\s/.test(email)) return "An email address has no spaces.";
  if (/[^\x00-\x7f]/.test(email)) {
    return "Write the email address in plain ASCII: letters a-z, digits and . _ + - before the @, and an international domain in its xn-- (punycode) form. Letters from other alphabets are not accepted.";
  }
  if (email.length > EMAIL_MAX_LENGTH) return `An email address has at most ${EMAIL_MAX_LENGTH} characters.`;
  const at = email.lastIndexOf("@");
  const [local, domain] = [email.slice(0, at), email.slice(at + 1)];
  if (at <= 0 || !domain || local.includes("@")) return "Enter an email address such as ada@example.com.";
  if (/^\.|\.\.|\.$/.test(local) || /^\.|\.\.|\.$/.test(domain)) {
    return "An email address cannot have two dots in a row, or a dot at the start or end of either part (as in a@b..c).";
  }
  if (local.length > 64) return "The part before the @ has at most 64 characters.";
  if (!new RegExp(`^${ATEXT}+(?:\\.${ATEXT}+)*$`).test(local)) {
    return "The part before the @ may hold letters, digits, dots and ! # $ % & ' * + / = ? ^ _ ` { | } ~ - only.";
  }
  if (!EMAIL_PATTERN.test(email)) {
    return "The part after the @ must be a domain such as example.com: letters, digits and inner hyphens in each part, and a top-level domain of letters.";
  }
  return null;
}

/** The dates a tool takes (YYYY-MM-DD, UTC) lie between these: nothing in Hatch is older, and the database can hold the
 * whole of each day (year 0 or the end of 9999-12-31 is a database range error, not an answer). */
export const DATE_INPUT_MIN = "2000-01-01";
export const DATE_INPUT_MAX = "2999-12-31";
const DATE_INPUT_PROBLEM = `Use a date from ${DATE_INPUT_MIN} to ${DATE_INPUT_MAX}, as YYYY-MM-DD (e.g. 2026-03-01)`;

/**
 * A calendar day a tool takes as input, bounded (DATE_INPUT_MIN..MAX); every date input uses this one schema. Besides
 * YYYY-MM-DD it reads the forms a model writes: an ISO time (its UTC day: 2026-03-01T10:00:00Z), 2026/03/01, and
 * English month names (March 1, 2026; 1 Mar 2026). Anything else, or an impossible day, is refused with an example.
 */
export function dateInputSchema() {
  return z
    .string()
    .max(64)
    .transform(dayOf)
    .pipe(
      z.iso
        .date({ error: DATE_INPUT_PROBLEM })
        .refine((day) => day >= DATE_INPUT_MIN && day <= DATE_INPUT_MAX, { error: DATE_INPUT_PROBLEM }),
    );
}

const MONTH_NAMES = [
  "january",
  "february",
  "march",
  "april",
  "may",
  "june",
  "july",
  "august",
  "september",
  "october",
  "november",
  "december",
];
const pad = (n: number | string) => String(n).padStart(2, "0");

/** The YYYY-MM-DD a written date means (UTC), or the text itself when it is none of the forms read (then refused). */
function dayOf(text: string): string {
  const given = text.trim();
  if (/^\d{4}-\d{2}-\d{2}$/.test(given)) return given;
  const slashed = /^(\d{4})\/(\d{1,2})\/(\d{1,2})$/.exec(given);
  if (slashed) return `${slashed[1]}-${pad(slashed[2]!)}-${pad(slashed[3]!)}`;
  const time = /^(\d{4}-\d{2}-\d{2})[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(given);
  if (time) {
    // Without a zone the day is the one written; with one, the UTC day of that moment.
    if (!time[2]) return time[1]!;
    const at = Date.parse(given.replace(" ", "T").replace(/([+-]\d{2})(\d{2})$/, "$1:$2"));
    return Number.isFinite(at) ? utcDay(at, time[1]!) : given;
  }
  // March 1, 2026 / 1 March 2026 / Mar 1st 2026.
  const words = given
    .toLowerCase()
    .replace(/,/g, " ")
    .replace(/(\d)(st|nd|rd|th)\b/g, "$1")
    .split(/\s+/);
  const monthOf = (w: string) =>
    w.length >= 3 ? MONTH_NAMES.findIndex((name) => name.startsWith(w.replace(/\.$/, ""))) : -1;
  if (words.length === 3 && /^\d{4}$/.test(words[2]!)) {
    const [first, second, year] = words as [string, string, string];
    const [month, day] = /^\d{1,2}$/.test(first) ? [monthOf(second), first] : [monthOf(first), second];
    if (month >= 0 && /^\d{1,2}$/.test(day)) return `${year}-${pad(month + 1)}-${pad(day)}`;
  }
  return given;
}

/** The UTC day of a moment; an impossible day written (2025-02-30T…) stays refused rather than rolled over. */
function utcDay(at: number, written: string): string {
  const [y, m, d] = written.split("-").map(Number) as [number, number, number];
  const check = new Date(Date.UTC(y, m - 1, d));
  if (check.getUTCMonth() !== m - 1 || check.getUTCDate() !== d) return written;
  return new Date(at).toISOString().slice(0, 10);
}

export const EmailSchema = z
  .email({
    pattern: EMAIL_PATTERN,
    error: (issue) => emailProblem(String(issue.input)) ?? "Enter an email address such as ada@example.com",
  })
  .max(EMAIL_MAX_LENGTH);

/**
 * Who can open an app. The spec leaves the value set open; these are ours:
 * private (only the owner), org (everyone in the owner's organization), people (the owner plus people added
 * by email), public (anyone with the link).
 */
export const VISIBILITIES = ["private", "org", "people", "public"] as const;
export const VisibilitySchema = z
  .enum(VISIBILITIES)
  .describe(
    "Who can open the app: private = only the owner; org = everyone in the owner's organization; " +
      "people = the owner and the people added by email; public = anyone with the link",
  );
export type Visibility = z.infer<typeof VisibilitySchema>;

/** An app's AI key choice (interface spec: company, mine, tool or none). Also the scopes of an AI provider key. */
export const AI_KEY_CHOICES = ["company", "mine", "tool", "none"] as const;
export const AiKeyChoiceSchema = z.enum(AI_KEY_CHOICES);
export type AiKeyChoice = z.infer<typeof AiKeyChoiceSchema>;

export const AI_KEY_SCOPES = ["mine", "company", "tool"] as const;
export const AiKeyScopeSchema = z
  .enum(AI_KEY_SCOPES)
  .describe("Whose key: mine = the user's own; company = the organization's; tool = one app's own key");
export type AiKeyScope = z.infer<typeof AiKeyScopeSchema>;

/** A domain name the user owns or wants to buy: at least two labels, e.g. example.com or app.example.com. */
export const DomainNameSchema = z
  .string()
  .min(3)
  .max(253)
  .regex(/^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})$/, {
    error: "Give a domain name such as example.com or apps.example.com, without https:// or a path",
  });

export const DNS_RECORD_TYPES = ["A", "AAAA", "CNAME", "TXT", "CAA"] as const;

/** A DNS record the user adds at their DNS provider. */
export const DnsRecordSchema = z.object({
  type: z.enum(DNS_RECORD_TYPES),
  name: z.string().describe("Host name of the record, as the DNS provider asks for it (e.g. apps or _hatch.apps)"),
  value: z.string().describe("What the record must contain"),
  ttl: z.number().int().nullable().describe("Suggested TTL in seconds; null means the provider's default"),
  status: z
    .enum(["missing", "wrong", "ok"])
    .describe("missing = not found yet; wrong = found with another value; ok = seen as expected"),
  purpose: z.string().optional().describe("What the record is for, in plain words"),
});
export type DnsRecord = z.infer<typeof DnsRecordSchema>;

/** A price. Amounts are integers in the currency's smallest unit, so no float rounding reaches a bill. */
export const MoneySchema = z.object({
  amountMinor: z.number().int().describe("Amount in the currency's smallest unit (cents for USD)"),
  currency: z.string().length(3).describe("ISO 4217 code, e.g. USD"),
  formatted: z.string().describe("Ready to show to the user, e.g. $12.00"),
});
export type Money = z.infer<typeof MoneySchema>;

/**
 * Present when the call could not finish without the user (interface spec, rule 3): the client cannot show
 * a form, so the AI either asks the user and calls again, or hands the user a dashboard link.
 * Secret values, AI keys and card details are never asked this way: always a link.
 */
export const UserActionSchema = z
  .object({
    kind: z
      .enum(["ask_user", "open_link"])
      .describe(
        "ask_user = ask the user the question in message yourself, then call the same tool again with their " +
          "answer in the input fields listed in fields; open_link = give the user url to open in a browser and " +
          "wait for them to say they are done",
      ),
    message: z.string().describe("What to tell or ask the user, in plain words"),
    fields: z.array(z.string()).describe("For ask_user: the input fields to fill from the user's answer"),
    url: z.string().nullable().describe("For open_link: the page where the user confirms or acts"),
    expiresAt: z.string().nullable().describe("ISO 8601 time after which the link or question is no longer valid"),
  })
  .describe("Set when nothing was done yet because the user must answer or act first");
export type UserAction = z.infer<typeof UserActionSchema>;

/** A person as shown in outputs (never more than email and display name). */
export const PersonSchema = z.object({
  email: z.string(),
  name: z.string(),
});

/** The four values of an organization role. owner: exactly one, transfers ownership; admin: a company admin. */
export const ORG_ROLES = ["owner", "admin", "manager", "member"] as const;
export const OrgRoleSchema = z
  .enum(ORG_ROLES)
  .describe(
    "owner = the one owner (everything, transfers ownership); admin = company admin (everything else, " +
      "including the company domain and billing); manager = manages people, pauses apps, reads the activity " +
      "log; member = publishes and manages their own apps",
  );
export type OrgRole = z.infer<typeof OrgRoleSchema>;

/** Roles that can be given by an invitation or a role change: ownership moves only by transfer. */
export const AssignableRoleSchema = z
  .enum(["admin", "manager", "member"])
  .describe(
    "admin = company admin (everything but ownership, including the company domain and billing); " +
      "manager = manages people, pauses apps, reads the activity log; member = publishes and manages own apps",
  );

/** Extra permissions a member can hold on top of the role. */
export const ORG_PERMISSIONS = [
  "publish",
  "share_public",
  "custom_domains",
  "buy_domains",
  "company_ai_key",
  "billing",
] as const;
export const OrgPermissionSchema = z
  .enum(ORG_PERMISSIONS)
  .describe(
    "publish = publish apps in the organization; share_public = make apps public; custom_domains = put apps " +
      "on custom domains; buy_domains = buy domains on the organization's bill; company_ai_key = let apps use " +
      "the company's AI key; billing = see and manage billing",
  );
export type OrgPermission = z.infer<typeof OrgPermissionSchema>;

/** The day of an ISO 8601 time (2026-03-01), as a tool's text says it. */
export const isoDay = (iso: string) => iso.slice(0, 10);

/** The key only when its value says something: not null or false (a structured form leaves such defaults out). */
export function whenSet<K extends string, V>(key: K, value: V): Partial<Record<K, V>> {
  if (value === null || value === undefined || value === false) return {};
  return { [key]: value } as Record<K, V>;
}
