import type { Question } from "@hatch/contracts";
import type { Params } from "../auth/index.ts";
import { html, type SafeHtml } from "../pages/layout.ts";

// The question's flat form as plain HTML (works without JavaScript) and the posted form read back into the
// answer the service expects. A question with one boolean field ("Delete it?") has no inputs at all: pressing
// Confirm is the answer.

type FormSchema = Question["schema"];
type Field = FormSchema["properties"][string];

/** Posted values by field key, kept to fill the form again after an error. */
export type FormValues = Record<string, string>;

const fieldName = (key: string) => `f.${key}`;
const labelOf = (key: string, field: Field) => field.title ?? key;

/** The key of the only field when the form is a single yes/no: the Confirm button answers it. */
export function soleBoolean(schema: FormSchema): string | null {
  const [only, ...others] = Object.entries(schema.properties);
  return only && others.length === 0 && only[1].type === "boolean" ? only[0] : null;
}

export function renderFields(schema: FormSchema, values: FormValues | null): SafeHtml {
  if (soleBoolean(schema)) return html``;
  const required = new Set(schema.required ?? []);
  return html`${Object.entries(schema.properties).map(([key, field]) => renderField(key, field, required.has(key), values))}`;
}

/** `values` is what was posted (shown again after an error), null on first display (defaults apply). */
function renderField(key: string, field: Field, required: boolean, values: FormValues | null): SafeHtml {
  const posted = values?.[key];
  const name = fieldName(key);
  const label = labelOf(key, field);
  const help =
    field.description && field.description !== label ? html`<span class="muted">${field.description}</span>` : "";
  const value = posted ?? (field.default === undefined ? "" : String(field.default));
  if (field.enum) {
    const choices = field.enum.map(
      (choice) =>
        html`<label class="choice"><input type="radio" name="${name}" value="${choice}"${value === choice ? html` checked` : ""}${required ? html` required` : ""}> ${choice}</label>`,
    );
    return html`<fieldset><legend>${label}</legend>${help}${choices}</fieldset>`;
  }
  if (field.type === "boolean") {
    // An unchecked box is not posted at all: after an error it stays unchecked, whatever the default.
    const checked = values ? posted === "true" : field.default === true;
    return html`<label class="choice"><input type="checkbox" name="${name}" value="true"${checked ? html` checked` : ""}> ${label}</label>${help}`;
  }
  const type = field.type === "string" ? "text" : "number";
  const step = field.type === "integer" ? html` step="1"` : field.type === "number" ? html` step="any"` : "";
  return html`<label>${label}${help}<input type="${type}" name="${name}" value="${value}"${step}${required ? html` required` : ""}></label>`;
}

export type ParsedAnswer =
  | { ok: true; answer: Record<string, unknown>; values: FormValues }
  | { ok: false; error: string; values: FormValues };

/** Reads the posted fields against the schema; the browser's own checks are a convenience, these decide. */
export function parseAnswer(schema: FormSchema, params: Params): ParsedAnswer {
  const only = soleBoolean(schema);
  if (only) return { ok: true, answer: { [only]: true }, values: {} };
  const required = new Set(schema.required ?? []);
  const answer: Record<string, unknown> = {};
  const values: FormValues = {};
  const problems: string[] = [];
  for (const [key, field] of Object.entries(schema.properties)) {
    const raw = params.get(fieldName(key));
    if (raw !== undefined) values[key] = raw;
    const read = readField(field, raw?.trim());
    if ("problem" in read) problems.push(`${labelOf(key, field)}: ${read.problem}`);
    else if (read.value !== undefined) answer[key] = read.value;
    else if (required.has(key)) problems.push(`${labelOf(key, field)}: please fill this in.`);
  }
  return problems.length ? { ok: false, error: problems.join(" "), values } : { ok: true, answer, values };
}

function readField(field: Field, raw: string | undefined): { value: unknown } | { problem: string } {
  if (field.type === "boolean") return { value: raw === "true" };
  if (raw === undefined || raw === "") return { value: undefined };
  if (field.enum && !field.enum.includes(raw)) return { problem: `choose one of ${field.enum.join(", ")}.` };
  if (field.type === "string") return { value: raw };
  const number = Number(raw);
  if (field.type === "integer" && !Number.isInteger(number)) return { problem: "enter a whole number." };
  if (!Number.isFinite(number)) return { problem: "enter a number." };
  return { value: number };
}
