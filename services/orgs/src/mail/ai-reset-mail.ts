import type { AiReset } from "@hatch/contracts";
import type { MailToQueue } from "./mailer.ts";

/** What paying for an app's AI calls became, in the words of the mail, the removal's answer and the activity log. */
export const aiNowWords = (now: AiReset["now"]) =>
  now === "company" ? "AI calls now use the organization's key" : "AI calls are off until its owner chooses a key";

/**
 * The mail to an app's owner when a person's own AI key stopped paying for their apps (the member was removed, or
 * the app moved to them from that member): which apps, and who pays now. Plain text, for people: no tool names.
 */
export function aiResetMail(input: {
  to: string;
  orgName: string;
  remover: { name: string; email: string };
  removed: { name: string; email: string };
  apps: AiReset[];
  baseUrl: string;
}): MailToQueue {
  const lines = input.apps.map((app) => {
    const now =
      app.now === "company"
        ? "the organization's AI key pays for its AI calls now"
        : "its AI calls are off until you choose which key pays";
    return `- ${app.name} (${app.address})${app.moved ? ", now yours" : ""}: ${now}.\n  ${input.baseUrl}/dashboard/apps/${encodeURIComponent(app.address)}`;
  });
  const body = `${input.remover.name} (${input.remover.email}) removed ${input.removed.name} (${input.removed.email}) from ${input.orgName} on Hatch.
A person's own AI key paid for the AI calls of these apps of yours, and no longer does:

${lines.join("\n")}

Which key pays for an app's AI calls is its owner's choice: ask your AI assistant to choose one on Hatch (your own,
the organization's or the app's), or leave it as it is.
`;
  return { to: input.to, subject: `AI calls of your apps in ${input.orgName} changed`, body };
}
