// The admin commands themselves, shared by `bun run admin` (direct, on the database) and the admin socket of
// `bun run dev` (the same code run inside the server): both print exactly the same lines.
import { AuthInputError, type Auth } from "@hatch/gateway";
import type { Logger } from "@hatch/platform";
import { z } from "zod";

export const AdminRequestSchema = z.discriminatedUnion("command", [
  z
    .object({
      command: z.literal("user:create"),
      email: z.string().min(1),
      password: z.string().min(1),
      name: z.string().min(1),
    })
    .strict(),
  z
    .object({
      command: z.literal("token:issue"),
      email: z.string().min(1),
      readOnly: z.boolean(),
      ttlSeconds: z.number().int().positive().optional(),
    })
    .strict(),
]);
export type AdminRequest = z.infer<typeof AdminRequestSchema>;

/** What the command printed (stdout, stderr), or why it was refused (a message for the operator). */
export type AdminResult = { ok: true; stdout: string; stderr: string } | { ok: false; message: string };

export async function runAdminCommand(
  auth: Auth,
  mcpUrl: string,
  request: AdminRequest,
  logger: Logger,
): Promise<AdminResult> {
  try {
    if (request.command === "user:create") {
      // The operator vouches for the address: the user is created verified (no mail is sent).
      const user = await auth.createUser(
        { email: request.email, password: request.password, name: request.name },
        { verified: true },
      );
      return { ok: true, stdout: `Created user ${user.email} (${user.id}), email verified.\n`, stderr: "" };
    }
    const issued = await auth.issueTokenForScript({
      email: request.email,
      readOnly: request.readOnly,
      ttlSeconds: request.ttlSeconds,
    });
    return {
      ok: true,
      stderr: `Access token for ${request.email} (grant ${issued.grantId}${request.readOnly ? ", read-only" : ""}), audience ${mcpUrl}:\n`,
      stdout: `${issued.accessToken}\n`,
    };
  } catch (error) {
    if (error instanceof AuthInputError) return { ok: false, message: error.message };
    // The detail (possibly SQL and its parameters) stays in the log; the operator gets what to do next.
    logger.error("admin command failed", { command: request.command, error });
    return { ok: false, message: `${request.command} failed inside Hatch; its log has the details.` };
  }
}
