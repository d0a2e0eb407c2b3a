import type { Question } from "@hatch/contracts";
import type { CallToolResult } from "@modelcontextprotocol/server";

// What the user answered in a form (MCP form elicitation), checked before it goes to the service. Declining,
// cancelling and leaving a confirmation box unticked mean one thing, so they get one shape: not an error, status
// `declined`, nothing changed. An answer that does not fit the form (a client that sent a string for a number,
// left out a required field, picked something not offered) is told apart from a fault and names the field.

export type AnswerCheck = { ok: true; answer: Record<string, unknown> } | { ok: false; result: CallToolResult };

/** The one shape of "the user said no" (declined, cancelled, a confirmation box left unticked). */
export function declinedResult(tool: string): CallToolResult {
  return {
    content: [
      {
        type: "text",
        text: `The user declined ${tool}, so nothing was changed. Do not call it again for this unless the user asks.`,
      },
    ],
    structuredContent: { status: "declined" },
  };
}

/**
 * Checks a form answer against the question's flat schema. A required boolean is a confirmation box: unless it is
 * true, the user declined. null (declined or cancelled in the client) is declined too.
 */
export function checkAnswer(tool: string, question: Question, answer: Record<string, unknown> | null): AnswerCheck {
  if (answer === null) return { ok: false, result: declinedResult(tool) };
  const { properties, required = [] } = question.schema;
  for (const key of required) {
    if (properties[key]?.type === "boolean" && answer[key] !== true) return { ok: false, result: declinedResult(tool) };
  }
  const problems: string[] = [];
  for (const key of required) if (answer[key] === undefined || answer[key] === "") problems.push(`${key} is required`);
  // Only the form's own fields go on (a client that sends more, e.g. one canned answer for every form, loses nothing).
  const fields: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(properties)) {
    const value = answer[key];
    if (value === undefined || value === null) continue;
    const fits =
      field.type === "boolean"
        ? typeof value === "boolean"
        : field.type === "string"
          ? typeof value === "string" && (!field.enum || field.enum.includes(value))
          : typeof value === "number" && Number.isFinite(value) && (field.type === "number" || Number.isInteger(value));
    if (!fits) problems.push(`${key} must be ${field.enum ? `one of ${field.enum.join(", ")}` : `a ${field.type}`}`);
    else fields[key] = value;
  }
  if (problems.length === 0) return { ok: true, answer: fields };
  return {
    ok: false,
    result: {
      isError: true,
      content: [
        {
          type: "text",
          text: `The answer the user's client sent does not fit the form (${problems.join("; ")}), so ${tool} changed nothing. Call ${tool} again to ask again. (invalid_input)`,
        },
      ],
    },
  };
}
