import { EmailSchema, type CallContext, type Question } from "@hatch/contracts";
import { z } from "zod";
import type { Registrant } from "../db/schema.ts";

// The registrant's details buy_domain asks for in its question (a form in the client, or the confirm page), checked
// here before anything is charged. A registrar publishes or verifies them; they are never returned by a tool.

const line = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .regex(/^[^\p{Cc}]*$/u, "has a control character");

const RegistrantAnswerSchema = z.object({
  agree: z.literal(true, { error: "tick the box that agrees to the price" }),
  name: line(100),
  email: EmailSchema,
  organization: z
    .string()
    .trim()
    .max(100)
    .regex(/^[^\p{Cc}]*$/u)
    .optional(),
  address: line(200),
  city: line(100),
  postalCode: z
    .string()
    .trim()
    .min(2)
    .max(16)
    .regex(/^[A-Za-z0-9 -]+$/, "letters, digits, spaces and hyphens"),
  country: z
    .string()
    .trim()
    .regex(/^[A-Za-z]{2}$/, "a two-letter country code such as US or DE")
    .transform((c) => c.toUpperCase()),
  phone: z
    .string()
    .trim()
    .regex(
      /^\+\d{1,3}[ .-]?\(?\d[\d ().-]{3,20}$/,
      "an international number starting with + and the country code, e.g. +1 555 010 0100",
    ),
});

/** The question's fields, with what Hatch already knows filled in. */
export function registrantFields(
  ctx: CallContext,
  prices: { first: string; renewal: string },
): Question["schema"]["properties"] {
  return {
    agree: {
      type: "boolean",
      title: `I agree to pay ${prices.first} now and ${prices.renewal} a year from the second year`,
    },
    name: { type: "string", title: "Owner's full name", default: ctx.name },
    email: { type: "string", title: "Owner's email", default: ctx.email },
    organization: { type: "string", title: "Organization (leave empty for a person)" },
    address: { type: "string", title: "Street address" },
    city: { type: "string", title: "City" },
    postalCode: { type: "string", title: "Postal code" },
    country: { type: "string", title: "Country (two letters, e.g. US)" },
    phone: { type: "string", title: "Phone with country code", description: "e.g. +1 555 010 0100" },
  };
}

export const REGISTRANT_REQUIRED = ["agree", "name", "email", "address", "city", "postalCode", "country", "phone"];

export type RegistrantCheck = { ok: true; registrant: Registrant } | { ok: false; problem: string; declined: boolean };

/** Reads the answer; `declined` when the person did not agree to the price. */
export function readRegistrant(answer: Record<string, unknown> | undefined): RegistrantCheck {
  if (!answer || answer.agree !== true)
    return { ok: false, problem: "The user did not agree to the price.", declined: true };
  const cleaned = Object.fromEntries(Object.entries(answer).filter(([, v]) => v !== "" && v !== null));
  const parsed = RegistrantAnswerSchema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".") || "answer"}: ${issue.message}`);
    return { ok: false, problem: `The owner's details are not complete: ${problems.join("; ")}.`, declined: false };
  }
  const { agree: _agree, phone, organization, ...rest } = parsed.data;
  return { ok: true, registrant: { ...rest, ...(organization ? { organization } : {}), phone: normalizePhone(phone) } };
}

/** +<country code>.<number>, the form registrars ask for: the first separator after the country code splits them. */
export function normalizePhone(phone: string): string {
  const match = /^\+(\d{1,3})[ .-]?(.*)$/.exec(phone.trim());
  if (!match) return phone;
  return `+${match[1]}.${match[2]!.replace(/\D/g, "")}`;
}
