import { bindTool, type Database } from "@hatch/platform";
import { whoami } from "@hatch/contracts";
import { ensurePerson } from "../db/accounts.ts";

export function whoamiTool(db: Database) {
  return bindTool(whoami, async ({ ctx }) => {
    const person = await ensurePerson(db, { userId: ctx.sub, email: ctx.email, name: ctx.name });
    const kind = person.accountKind;
    const where = kind === "company" ? `the company account "${person.accountName}"` : "a personal account";
    return {
      text: `Signed in as ${person.name} <${person.email}>, acting as ${where}.`,
      data: { email: person.email, name: person.name, kind },
    };
  });
}
