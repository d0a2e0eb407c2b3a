import { z } from "zod";
import { plainText, textBlock } from "../text.ts";
import {
  AppRefSchema,
  AssignableRoleSchema,
  dateInputSchema,
  EmailSchema,
  isoDay,
  OrgPermissionSchema,
  OrgRoleSchema,
  PersonSchema,
  UserActionSchema,
  whenSet,
} from "./common.ts";
import { defineTool, type ToolInput, type ToolOutput } from "./define.ts";

export const AccountKindSchema = z.enum(["personal", "company"]);

export const whoami = defineTool({
  name: "whoami",
  title: "Who am I signed in as",
  description:
    "Tells which Hatch account this connection acts as: email, name, and personal or company. Use it when the user " +
    "asks, or to confirm the account before changing apps.",
  service: "orgs",
  class: "read",
  input: z.object({}).strict(),
  output: z.object({
    email: z.string(),
    name: z.string(),
    kind: AccountKindSchema.describe("personal: a single person's account; company: an organization's account"),
  }),
});

// The rest of services/orgs' tools: organizations, members, invitations and the activity log.

export const ORG_INVITE_MAX_PEOPLE = 50;
export const ORG_ACTIVITY_MAX_ENTRIES = 50;

const OrgSummarySchema = z.object({
  id: z.string(),
  name: z.string(),
});

const InvitationSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: AssignableRoleSchema,
  permissions: z.array(OrgPermissionSchema),
  invitedBy: z.string().describe("Email of the person who sent it"),
  invitedAt: z.string().describe("ISO 8601"),
  expiresAt: z.string().describe("ISO 8601"),
  status: z.enum(["pending", "expired"]),
});

const MemberSchema = z.object({
  email: z.string(),
  name: z.string(),
  role: OrgRoleSchema,
  permissions: z.array(OrgPermissionSchema),
  joinedAt: z.string().describe("ISO 8601"),
});

export const org = defineTool({
  name: "org",
  title: "Show my organization",
  description:
    "Shows the organization the user belongs to, the user's role and permissions in it, and what the user " +
    "may do (invite, manage members, pause apps, read the activity log, set the company domain, manage " +
    "billing, transfer ownership). Also lists invitations waiting for the user, which org_setup can accept. " +
    "org is null when the user is in no organization.",
  service: "orgs",
  class: "read",
  input: z.object({}).strict(),
  output: z.object({
    org: OrgSummarySchema.extend({
      owner: PersonSchema,
      memberCount: z.number().int(),
      createdAt: z.string().describe("ISO 8601"),
    }).nullable(),
    role: OrgRoleSchema.nullable(),
    permissions: z.array(OrgPermissionSchema),
    can: z
      .object({
        invite: z.boolean(),
        manageMembers: z.boolean(),
        pauseApps: z.boolean(),
        readActivity: z.boolean(),
        setCompanyDomain: z.boolean(),
        manageBilling: z.boolean(),
        transferOwnership: z.boolean(),
      })
      .describe("What the user may do in the organization"),
    invitationsForMe: z.array(
      z.object({
        invitationId: z.string(),
        org: OrgSummarySchema,
        role: AssignableRoleSchema,
        invitedBy: z.string().describe("Email of the person who invited the user"),
        expiresAt: z.string().describe("ISO 8601"),
      }),
    ),
  }),
  // The text gives the permissions, the invitations' inviters and expiry; what the user may do is the list it names.
  // The id identifies the organization the text names, for programs (a text never shows internal ids).
  structured: (d) => ({
    org: d.org ? { id: d.org.id, name: d.org.name, owner: d.org.owner.email, memberCount: d.org.memberCount } : null,
    ...whenSet("role", d.role),
    ...(d.org
      ? {
          may: Object.entries(d.can)
            .filter(([, allowed]) => allowed)
            .map(([what]) => what),
        }
      : {}),
    invitationsForMe: d.invitationsForMe.map((i) => ({ invitationId: i.invitationId, org: { name: i.org.name } })),
  }),
});

export const org_setup = defineTool({
  name: "org_setup",
  title: "Create or join an organization",
  description:
    "Creates a new organization with the user as owner (action create), turns the user's personal account " +
    "into an organization keeping its apps (action convert), or accepts an invitation the user received " +
    "(action accept; invitationId only when several invitations wait), or renames the user's organization (action " +
    "rename: owner and admins). Do it only when the user asked to.",
  service: "orgs",
  class: "change",
  input: z
    .object({
      action: z
        .enum(["create", "convert", "accept", "rename"])
        .describe(
          "create = a new organization; convert = turn this account into one; accept = join by invitation; " +
            "rename = give the user's organization a new name",
        ),
      name: plainText(100).optional().describe("For create, convert and rename: the organization's name"),
      invitationId: z
        .string()
        .max(100)
        .regex(/^[A-Za-z0-9_-]+$/, { error: "An invitation id is letters, digits, _ and -, as org lists it (inv_…)" })
        .optional()
        .describe("For accept: the invitation's id from org"),
    })
    .strict(),
  output: z.object({
    status: z.enum(["created", "converted", "joined", "renamed"]),
    org: OrgSummarySchema,
    role: OrgRoleSchema,
    permissions: z.array(OrgPermissionSchema),
  }),
  // The text names the organization and the role (org shows the permissions); the id identifies the organization it
  // names, for programs (a text never shows internal ids: test/model-walk-round2).
  structured: (d) => ({ status: d.status, org: { id: d.org.id, name: d.org.name }, role: d.role }),
});

export const org_invite = defineTool({
  name: "org_invite",
  title: "Invite people or revoke invitations",
  description:
    "Invites people to the organization by email with a role and permissions, or revokes their pending invitations. " +
    "Each gets an email with a link valid for 7 days, also without a Hatch account. Only the owner, admins and " +
    "managers invite, giving roles and permissions at most their own. At most 50 people per call: split longer " +
    "lists. Members and people already invited come back in skipped.",
  service: "orgs",
  class: "delete",
  openWorld: true,
  input: z
    .object({
      action: z
        .enum(["invite", "revoke"])
        .default("invite")
        .describe("invite = send invitations; revoke = cancel pending invitations to these emails"),
      emails: z
        .array(EmailSchema)
        .min(1)
        .max(ORG_INVITE_MAX_PEOPLE, {
          error: `At most ${ORG_INVITE_MAX_PEOPLE} people can be invited in one call; split the list`,
        })
        .describe("Email addresses of the people, at most 50"),
      role: AssignableRoleSchema.default("member").describe(
        "For invite: the role they get. admin = company admin; manager = manages people, pauses apps, reads " +
          "the activity log; member = publishes and manages own apps",
      ),
      permissions: z
        .array(OrgPermissionSchema)
        .max(20)
        .optional()
        .describe("For invite: extra permissions on top of the role"),
      message: textBlock(500).optional().describe("For invite: a short note added to the email"),
    })
    .strict(),
  output: z.object({
    status: z.enum(["invited", "revoked", "needs_user"]),
    invited: z.array(InvitationSchema),
    revoked: z.array(z.string()).describe("Emails whose invitations were revoked"),
    skipped: z.array(z.object({ email: z.string(), reason: z.string() })),
    userAction: UserActionSchema.optional(),
  }),
  // The text names who was invited (one role and permissions per call, one expiry day) or revoked, and who was skipped.
  structured: (d) => ({
    status: d.status,
    invited: d.invited.map((i) => i.email),
    revoked: d.revoked,
    skipped: d.skipped,
  }),
});

export const org_members = defineTool({
  name: "org_members",
  title: "List members and invitations",
  description:
    "Lists the organization's members with their role, permissions and join date, and the pending " +
    "invitations with role, permissions, who sent them and when they expire. Use it before changing roles, " +
    "removing someone or revoking an invitation.",
  service: "orgs",
  class: "read",
  input: z
    .object({
      include: z
        .enum(["all", "members", "invitations"])
        .default("all")
        .describe("all = both; members = members only; invitations = invitations only"),
    })
    .strict(),
  output: z.object({
    members: z.array(MemberSchema),
    invitations: z.array(InvitationSchema),
  }),
  // The text gives each one's permissions and each invitation's inviter and day; here who, which role, since or until.
  structured: (d) => ({
    members: d.members.map((m) => ({ email: m.email, name: m.name, role: m.role, joinedAt: isoDay(m.joinedAt) })),
    invitations: d.invitations.map((i) => ({
      email: i.email,
      role: i.role,
      expiresAt: isoDay(i.expiresAt),
      ...whenSet("expired", i.status === "expired"),
    })),
  }),
});

export const org_member_update = defineTool({
  name: "org_member_update",
  title: "Change or remove a member",
  description:
    "Changes a member's role and permissions (update) or removes a member (remove): managers only, for people whose " +
    "role is at most their own, never the owner. remove asks the user once (a form or one link), showing the apps " +
    "that move and their receiver: you (the owner when you leave) unless the user picks another member there. " +
    "transfer_ownership makes the member the owner (the old owner becomes an admin): the owner only.",
  service: "orgs",
  class: "delete",
  input: z
    .object({
      email: EmailSchema.describe("Email of the member to change"),
      action: z
        .enum(["update", "remove", "transfer_ownership"])
        .describe(
          "update = change role and permissions; remove = take out of the organization; " +
            "transfer_ownership = make them the owner",
        ),
      role: AssignableRoleSchema.optional().describe("For update: the new role"),
      permissions: z
        .array(OrgPermissionSchema)
        .max(20)
        .optional()
        .describe("For update: the full new list of extra permissions (replaces the old list)"),
      appsRecipient: EmailSchema.optional().describe(
        "For remove: the member who receives the removed person's apps, only when the user already named one",
      ),
    })
    .strict(),
  output: z.object({
    status: z
      .enum(["updated", "removed", "transferred", "choose_recipient", "needs_user"])
      .describe(
        "needs_user = nothing changed yet: the user confirms through userAction; appsToMove go to appsRecipient " +
          "unless the user picks another member there (choose_recipient is no longer sent)",
      ),
    member: MemberSchema.nullable().describe("The member after the change; null once removed"),
    appsToMove: z
      .array(z.object({ address: z.string(), name: z.string() }))
      .describe("On remove: the apps that move to the recipient"),
    appsRecipient: z.string().nullable(),
    userAction: UserActionSchema.optional(),
  }),
});

export const org_activity = defineTool({
  name: "org_activity",
  title: "Read the activity log",
  description:
    "Reads the organization's activity log, newest first, the latest 50 at most: who did what to which app, when, " +
    "and through which AI client. Managers only (the owner, admins and managers).",
  service: "orgs",
  class: "read",
  input: z
    .object({
      from: dateInputSchema()
        .optional()
        .describe("Only entries on or after this day (UTC), e.g. 2026-03-01; a time is read as its UTC day"),
      to: dateInputSchema()
        .optional()
        .describe("Only entries on or before this day (UTC), e.g. 2026-03-31; a time is read as its UTC day"),
      person: EmailSchema.optional().describe("Only what this person did"),
      app: AppRefSchema.optional().describe("Only entries about this app: its address, URL or exact name"),
      action: z
        .string()
        .regex(/^[a-z_]+(?:\.[a-z_]+)*$/)
        .max(64)
        .optional()
        .describe("Only this kind of action, e.g. app.published, app.deleted, member.removed, domain.bought"),
      limit: z
        .number()
        .int()
        .min(1)
        .max(ORG_ACTIVITY_MAX_ENTRIES)
        .default(ORG_ACTIVITY_MAX_ENTRIES)
        .describe("How many of the latest entries, at most 50"),
    })
    .strict(),
  output: z.object({
    entries: z
      .array(
        z.object({
          date: z.string().describe("ISO 8601 time"),
          person: PersonSchema.nullable().describe("Who did it; null for the system"),
          app: z.string().nullable().describe("The app's address, when it concerns an app"),
          action: z.string(),
          summary: z.string().describe("One line in plain words"),
          client: z
            .object({ kind: z.string(), name: z.string() })
            .nullable()
            .describe("The AI client it came through, as that client named itself; null when not through one"),
        }),
      )
      .describe("Newest first"),
    hasMore: z.boolean().describe("true when older entries match too; narrow the filters to see them"),
  }),
  // The text says each entry in words, to the minute, with its client; here when, who, which app and the action's kind.
  structured: (d) => ({
    entries: d.entries.map((e) => ({
      date: `${e.date.slice(0, 16)}Z`,
      ...whenSet("person", e.person?.email ?? null),
      ...whenSet("app", e.app),
      action: e.action,
    })),
    ...whenSet("hasMore", d.hasMore),
  }),
});

export type WhoamiInput = ToolInput<typeof whoami>;
export type WhoamiOutput = ToolOutput<typeof whoami>;
export type OrgInput = ToolInput<typeof org>;
export type OrgOutput = ToolOutput<typeof org>;
export type OrgSetupInput = ToolInput<typeof org_setup>;
export type OrgSetupOutput = ToolOutput<typeof org_setup>;
export type OrgInviteInput = ToolInput<typeof org_invite>;
export type OrgInviteOutput = ToolOutput<typeof org_invite>;
export type OrgMembersInput = ToolInput<typeof org_members>;
export type OrgMembersOutput = ToolOutput<typeof org_members>;
export type OrgMemberUpdateInput = ToolInput<typeof org_member_update>;
export type OrgMemberUpdateOutput = ToolOutput<typeof org_member_update>;
export type OrgActivityInput = ToolInput<typeof org_activity>;
export type OrgActivityOutput = ToolOutput<typeof org_activity>;
