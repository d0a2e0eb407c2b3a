import { delete_tool, list_tools, publish, rollback, service_docs, share } from "./apps.ts";
import { tool_data, tool_logs, tool_stats } from "./apps-insight.ts";
import { ai_key, tool_ai, tool_secret } from "./apps-keys.ts";
import { org_app_pause, org_apps } from "./apps-org.ts";
import { billing } from "./billing.ts";
import type { ToolContract } from "./define.ts";
import {
  buy_domain,
  company_domain,
  company_domain_set,
  custom_domain,
  custom_domains,
  domain_status,
  find_domain,
} from "./domains.ts";
import { org, org_activity, org_invite, org_member_update, org_members, org_setup, whoami } from "./orgs.ts";

/** Every tool name, in the interface spec's order. */
export const TOOL_NAMES = [
  "publish",
  "service_docs",
  "list_tools",
  "whoami",
  "share",
  "rollback",
  "delete_tool",
  "tool_data",
  "tool_logs",
  "tool_stats",
  "tool_secret",
  "ai_key",
  "tool_ai",
  "company_domain",
  "company_domain_set",
  "custom_domains",
  "custom_domain",
  "find_domain",
  "buy_domain",
  "domain_status",
  "billing",
  "org",
  "org_setup",
  "org_invite",
  "org_members",
  "org_member_update",
  "org_apps",
  "org_app_pause",
  "org_activity",
] as const;
export type ToolName = (typeof TOOL_NAMES)[number];
/** Same union as ToolName, under the constant's name. */
export type TOOL_NAMES = ToolName;

/** The 29 tool contracts, in the interface spec's order (the order clients list them in). */
export const TOOL_CONTRACTS: readonly ToolContract[] = [
  publish,
  service_docs,
  list_tools,
  whoami,
  share,
  rollback,
  delete_tool,
  tool_data,
  tool_logs,
  tool_stats,
  tool_secret,
  ai_key,
  tool_ai,
  company_domain,
  company_domain_set,
  custom_domains,
  custom_domain,
  find_domain,
  buy_domain,
  domain_status,
  billing,
  org,
  org_setup,
  org_invite,
  org_members,
  org_member_update,
  org_apps,
  org_app_pause,
  org_activity,
];

const BY_NAME: ReadonlyMap<string, ToolContract> = new Map(TOOL_CONTRACTS.map((c) => [c.name, c]));

// A registry that disagrees with its name list is a bug that would surface as a missing tool far away.
if (BY_NAME.size !== TOOL_NAMES.length || TOOL_NAMES.some((name, i) => TOOL_CONTRACTS[i]?.name !== name)) {
  throw new Error("TOOL_CONTRACTS and TOOL_NAMES disagree");
}

export function isToolName(name: string): name is ToolName {
  return BY_NAME.has(name);
}

export function getToolContract(name: string): ToolContract | undefined {
  return BY_NAME.get(name);
}

export {
  ai_key,
  billing,
  buy_domain,
  company_domain,
  company_domain_set,
  custom_domain,
  custom_domains,
  delete_tool,
  domain_status,
  find_domain,
  list_tools,
  org,
  org_activity,
  org_app_pause,
  org_apps,
  org_invite,
  org_member_update,
  org_members,
  org_setup,
  publish,
  rollback,
  service_docs,
  share,
  tool_ai,
  tool_data,
  tool_logs,
  tool_secret,
  tool_stats,
  whoami,
};

export {
  CLIENT_KINDS,
  DEFAULT_TOOL_TIMEOUT_MS,
  SERVICE_NAMES,
  defineTool,
  type ClientKind,
  type ServiceName,
  type ToolAnnotations,
  type ToolClass,
  type ToolContract,
  type ToolContractOptions,
  type ToolInput,
  type ToolOutput,
} from "./define.ts";

export {
  AI_KEY_CHOICES,
  AI_KEY_SCOPES,
  AiKeyChoiceSchema,
  AiKeyScopeSchema,
  AppAddressSchema,
  AppRefSchema,
  AssignableRoleSchema,
  DNS_RECORD_TYPES,
  DnsRecordSchema,
  DomainNameSchema,
  DATE_INPUT_MAX,
  DATE_INPUT_MIN,
  dateInputSchema,
  EmailSchema,
  emailProblem,
  MoneySchema,
  ORG_PERMISSIONS,
  ORG_ROLES,
  OrgPermissionSchema,
  OrgRoleSchema,
  PersonSchema,
  UserActionSchema,
  VISIBILITIES,
  VisibilitySchema,
  type AiKeyChoice,
  type AiKeyScope,
  type DnsRecord,
  type Money,
  type OrgPermission,
  type OrgRole,
  type UserAction,
  type Visibility,
} from "./common.ts";

export {
  DOCS_TOPICS,
  type DeleteToolInput,
  type DeleteToolOutput,
  type ListToolsInput,
  type ListToolsOutput,
  type PublishInput,
  type PublishOutput,
  type RollbackInput,
  type RollbackOutput,
  type ServiceDocsInput,
  type ServiceDocsOutput,
  type ShareInput,
  type ShareOutput,
} from "./apps.ts";
export {
  APP_LOG_LEVELS,
  TOOL_LOGS_MAX_LINES,
  type ToolDataInput,
  type ToolDataOutput,
  type ToolLogsInput,
  type ToolLogsOutput,
  type ToolStatsInput,
  type ToolStatsOutput,
} from "./apps-insight.ts";
export {
  type AiKeyInput,
  type AiKeyOutput,
  type ToolAiInput,
  type ToolAiOutput,
  type ToolSecretInput,
  type ToolSecretOutput,
} from "./apps-keys.ts";
export { type OrgAppPauseInput, type OrgAppPauseOutput, type OrgAppsInput, type OrgAppsOutput } from "./apps-org.ts";

export {
  CONNECTION_STAGES,
  ConnectionStageSchema,
  DOMAIN_STAGES,
  DomainStageSchema,
  type BuyDomainInput,
  type BuyDomainOutput,
  type CompanyDomainInput,
  type CompanyDomainOutput,
  type CompanyDomainSetInput,
  type CompanyDomainSetOutput,
  type CustomDomainInput,
  type CustomDomainOutput,
  type CustomDomainsInput,
  type CustomDomainsOutput,
  type DomainStatusInput,
  type DomainStatusOutput,
  type FindDomainInput,
  type FindDomainOutput,
} from "./domains.ts";

export {
  BILLING_STATES,
  BillingStateSchema,
  PLANS,
  PlanSchema,
  type BillingInput,
  type BillingOutput,
  type BillingState,
  type Plan,
} from "./billing.ts";

export {
  AccountKindSchema,
  ORG_ACTIVITY_MAX_ENTRIES,
  ORG_INVITE_MAX_PEOPLE,
  type OrgActivityInput,
  type OrgActivityOutput,
  type OrgInput,
  type OrgInviteInput,
  type OrgInviteOutput,
  type OrgMemberUpdateInput,
  type OrgMemberUpdateOutput,
  type OrgMembersInput,
  type OrgMembersOutput,
  type OrgOutput,
  type OrgSetupInput,
  type OrgSetupOutput,
  type WhoamiInput,
  type WhoamiOutput,
} from "./orgs.ts";
