export { withDeadline } from "./deadline.ts";
export { ALWAYS_OFFERED, groupOf, parseFeatures, TOOL_GROUP_NAMES, TOOL_GROUPS } from "./contracts/groups.ts";
export type { ToolGroup } from "./contracts/groups.ts";
export { BusError, decodeJson, encodeJson, subjectMatches, toBytes, withPrefix, withoutPrefix } from "./bus/types.ts";
export type {
  Bus,
  BusErrorCode,
  BusHandler,
  BusMessage,
  BusReply,
  BusSubscription,
  PublishOptions,
  RequestOptions,
  SubscribeOptions,
} from "./bus/types.ts";
export { createMemoryBus } from "./bus/memory.ts";
export { requestTraced } from "./bus/traced.ts";
export type { TracedRequestOptions } from "./bus/traced.ts";
export {
  busTarget,
  metrics,
  metricsRegistry,
  metricsResponse,
  serveMetrics,
  statusClass,
  watchOutbox,
} from "./telemetry/metrics.ts";
export type { MetricsListener, OutboxLag } from "./telemetry/metrics.ts";
export {
  activeTraceparent,
  inSpan,
  SpanKind,
  startTracing,
  tracesEndpoint,
  tracingEnabled,
} from "./telemetry/tracing.ts";
export type { SpanHandle, SpanOptions, Tracing, TracingOptions } from "./telemetry/tracing.ts";
export { checkReadiness, probeResponse, type Readiness } from "./readiness.ts";
export { busReachable, createNatsBus, isNatsBus, natsServers, wrapNatsConnection } from "./bus/nats.ts";
export { ensureReplicas, openKvBucket } from "./bus/jetstream-replicas.ts";
export type { NatsBus, NatsBusOptions } from "./bus/nats.ts";
export { LazyKv } from "./bus/lazy-kv.ts";
export { ERROR_CODES, ToolError, isToolError } from "./errors.ts";
export type { ErrorCode } from "./errors.ts";
export {
  CallErrorSchema,
  CallReplySchema,
  isAskReply,
  CallRequestSchema,
  HEADER_REQUEST_ID,
  HEADER_TRACEPARENT,
  QuestionSchema,
} from "./envelope.ts";
export type { AskReply, CallError, CallReply, CallRequest, Question } from "./envelope.ts";
export { openPayload, signPayload } from "./signed.ts";
export {
  CallContextSchema,
  CONTEXT_TTL_SECONDS,
  CONTEXT_VERSION,
  CONTEXT_VERSIONS_READ,
  ContextVersions,
  deriveKey,
  openContext,
  signContext,
  verifyContext,
} from "./ctx.ts";
export type { CallContext, CallContextClaims, OpenedContext } from "./ctx.ts";
export { formatBytes, inlineLimitProblem, PUBLISH_LIMITS } from "./apps/limits.ts";
export { developerReference } from "./apps/reference.ts";
export { EXAMPLE_APP } from "./apps/example-app.ts";
export type { ReferenceSettings, ReferenceTopic } from "./apps/reference.ts";
export { addressKey, clientAddressOf } from "./address-key.ts";
export { SERVICE_JSON_KEYS, ServiceJsonSchema } from "./apps/service-json.ts";
export {
  BUCKET_OPERATIONS,
  bucketRules,
  BucketRulesSchema,
  COLLECTION_OPERATIONS,
  collectionRules,
  CollectionRulesSchema,
  DATA_ERROR_STATUS,
  DATA_LIMITS,
  DATA_NAME,
  DATA_RULES,
  DataRuleSchema,
  DEFAULT_DATA_RULE,
  DOCUMENT_FIELD,
  DOCUMENT_META_FIELDS,
} from "./apps/data-rules.ts";
export type {
  BucketOperation,
  BucketRules,
  CollectionOperation,
  CollectionRules,
  DataErrorCode,
  DataRule,
} from "./apps/data-rules.ts";
export type { ServiceJson } from "./apps/service-json.ts";
export {
  AI_LIMITS,
  AI_PROVIDER_NAME,
  AiChatRequestSchema,
  apiRule,
  ApiPlacementSchema,
  ApiSchema,
  ApisSchema,
  DEFAULT_API_PLACEMENT,
  MAX_APIS,
  placementText,
  SECRET_NAME,
  SECRET_VALUE_MAX_CHARS,
  SECRET_VALUE_MIN_CHARS,
  SecretNameSchema,
  SERVER_LIMITS,
  ServerModuleSchema,
} from "./apps/server-code.ts";
export type { AiChatReply, AiChatRequest, ApiDeclaration, ApiPlacement, ApiRule } from "./apps/server-code.ts";
export {
  buildQuestion,
  canonicalJson,
  checkConfirm,
  CONFIRM_TTL_SECONDS,
  confirmProblem,
  inputHash,
  issueConfirm,
} from "./confirm.ts";
export type { ConfirmBinding, ConfirmCheck, ConfirmClaims, QuestionOptions } from "./confirm.ts";
export { confirmUsesTable, consumeConfirm } from "./confirm-store.ts";
export type { ConfirmUsesTable } from "./confirm-store.ts";
export { EventActorSchema, eventSubject, HatchEventSchema, newEvent } from "./events/event.ts";
export type { EventActor, HatchEvent, NewEventFields } from "./events/event.ts";
export { eventStreamFor } from "./events/index.ts";
export { createJetStreamEventStream, deleteEventsStream, eventsStreamName } from "./events/jetstream-stream.ts";
export { createMemoryEventStream } from "./events/memory-stream.ts";
export { createOutboxRelay, outboxTable, writeEvent } from "./events/outbox.ts";
export type { OutboxRelay, OutboxRelayOptions, OutboxTable } from "./events/outbox.ts";
export type { ConsumeOptions, EventConsumer, EventStream } from "./events/stream.ts";
export {
  AccountStorageInputSchema,
  AccountStorageSchema,
  CustomDomainsCountSchema,
  ChargeInputSchema,
  RefundInputSchema,
  RefundResultSchema,
  ChargeResultSchema,
  CardCheckInputSchema,
  CardCheckSchema,
  effectivePlan,
  EntitlementsInputSchema,
  EntitlementsSchema,
  LIMIT_NAMES,
  limitsOf,
  MAX_SEATS,
  paidPlanFor,
  PLAN_TABLE,
  planTableMarkdown,
  ProviderWebhookInputSchema,
  ProviderWebhookResultSchema,
} from "./billing/plans.ts";
export type {
  CardCheck,
  ChargeResult,
  Entitlements,
  RefundResult,
  LimitName,
  PlanInfo,
  PlanLimits,
} from "./billing/plans.ts";
export { checkLimit, EntitlementsCache } from "./billing/entitlements.ts";
export { checkLimitLocked } from "./billing/limit-lock.ts";
export type { LockedLimit } from "./billing/limit-lock.ts";
export { createRateCounter, deleteRateBucket, KvRateCounter, MemoryRateCounter } from "./rate/counter.ts";
export type { RateCounter, RateDecision } from "./rate/counter.ts";
export { LeasedRateCounter, leaseHotKeys } from "./rate/leased.ts";
export {
  BillingLinkInputSchema,
  BillingLinkSchema,
  BillingSettingsInputSchema,
  BillingSettingsSchema,
  LocalActInputSchema,
  LocalActResultSchema,
  ReceiptsSchema,
} from "./billing/settings.ts";
export type { BillingSettings, LocalActInput, Receipts } from "./billing/settings.ts";
export {
  AiKeyPageSchema,
  AiKeySetInputSchema,
  AiKeyTargetSchema,
  AppLookupInputSchema,
  AppLookupSchema,
  SeatsUsedInputSchema,
  SeatsUsedSchema,
  HostChangedSchema,
  HostResolvedSchema,
  HostResolveInputSchema,
  DashboardAppInputSchema,
  DashboardAppSchema,
  DashboardDocumentAnswerSchema,
  DashboardFileAnswerSchema,
  DashboardFileDeletedSchema,
  DashboardFileInputSchema,
  DashboardFileSchema,
  DashboardFilesInputSchema,
  DashboardFilesSchema,
  DashboardDocumentDeletedSchema,
  DashboardDocumentInputSchema,
  DashboardDocumentSchema,
  DashboardDocumentsInputSchema,
  DashboardDocumentsSchema,
  DashboardLogsInputSchema,
  DashboardLogsSchema,
  DomainProgressInputSchema,
  DomainProgressSchema,
  InvitationAcceptedSchema,
  InvitationPreviewSchema,
  InvitationTokenInputSchema,
  MailOutboxSchema,
  AiResetSchema,
  OwnedAppSchema,
  OwnedAppsListInputSchema,
  OwnedAppsMoveInputSchema,
  OwnedAppsSchema,
  SecretConfirmInputSchema,
  SecretDestinationSchema,
  SecretPageInputSchema,
  SecretPageSchema,
  SecretSetInputSchema,
  VerificationMailInputSchema,
  VerificationMailSentSchema,
} from "./internal-rpc.ts";
export type {
  AiKeyPage,
  AiReset,
  AppLookup,
  SeatsUsed,
  DashboardApp,
  DashboardDocument,
  DashboardDocuments,
  DashboardFile,
  DashboardFileAnswer,
  DashboardFiles,
  DashboardLogs,
  DomainProgress,
  HostResolved,
  InvitationAccepted,
  InvitationPreview,
  MailOutbox,
  OwnedApps,
  SecretPage,
  VerificationMailSent,
} from "./internal-rpc.ts";
export { acceptRequestId, childTraceparent, randomId, traceIdOf } from "./ids.ts";
export { isSpecialPurposeAddress, parseIPv4, parseIPv6 } from "./ip-ranges.ts";
export { createLogger, LOG_LEVELS } from "./logger.ts";
export type { LogLevel, Logger, LoggerOptions } from "./logger.ts";
export { CommonEnvSchema, ConfigError, databaseSettingsFrom, loadConfig } from "./config.ts";
export type { CommonEnv } from "./config.ts";
export { DEFAULT_POOL_SIZE, openEmbeddedPostgres, openServiceDatabase } from "./db.ts";
export type { Database, DatabaseHandle, DatabaseSource, OpenDatabaseOptions, PostgresPoolSettings } from "./db.ts";
export { callRpc, RpcReplySchema, RpcRequestSchema, unavailable } from "./rpc.ts";
export type { RpcCallOptions, RpcReply } from "./rpc.ts";
export { bindRpc, bindTool, startService } from "./service.ts";
export type {
  RpcBinding,
  RpcCall,
  RunningService,
  ServiceOptions,
  ToolBinding,
  ToolCall,
  ToolHandler,
  ToolOutcome,
} from "./service.ts";
export { describeIssues } from "./validation.ts";
export { CONTROL_CHARS_MESSAGE, hasControlChars, plainText, plural, stripControlChars, textBlock } from "./text.ts";
export { rpcMethods, subjects } from "./subjects.ts";
export {
  openViewerCheck,
  signViewerCheck,
  signViewerTicket,
  verifyViewerTicket,
  VIEWER_CHECK_TTL_SECONDS,
  VIEWER_TICKET_TTL_SECONDS,
  ViewerChangedSchema,
  ViewerCheckAppSchema,
  ViewerCheckInputSchema,
  ViewerCheckSchema,
  ViewerIdentitySchema,
  ViewerOriginInputSchema,
  ViewerOriginSchema,
} from "./viewer-ticket.ts";
export type {
  ViewerChanged,
  ViewerCheck,
  ViewerCheckApp,
  ViewerCheckQuestion,
  ViewerIdentity,
  ViewerOrigin,
  ViewerSession,
  ViewerTicketCheck,
  ViewerTicketClaims,
} from "./viewer-ticket.ts";
export { PERMISSIONS, ResolveSessionInputSchema, ROLES, SessionAccountsSchema, SessionSchema } from "./session.ts";
export type { Permission, Role, Session, SessionAccounts } from "./session.ts";
export { runServiceMain } from "./main.ts";
export { DEFAULT_SHUTDOWN_TIMEOUT_MS, EXIT_CODES, onShutdown, parentPidFrom } from "./shutdown.ts";
export type { Shutdown, ShutdownOptions, ShutdownStep } from "./shutdown.ts";
export type { ServiceDeps, ServiceMainOptions } from "./main.ts";
export {
  AI_KEY_CHOICES,
  AI_KEY_SCOPES,
  AccountKindSchema,
  AiKeyChoiceSchema,
  AiKeyScopeSchema,
  AppAddressSchema,
  AppRefSchema,
  AssignableRoleSchema,
  BILLING_STATES,
  BillingStateSchema,
  CLIENT_KINDS,
  CONNECTION_STAGES,
  ConnectionStageSchema,
  DEFAULT_TOOL_TIMEOUT_MS,
  DNS_RECORD_TYPES,
  DOCS_TOPICS,
  DOMAIN_STAGES,
  DnsRecordSchema,
  DomainNameSchema,
  DomainStageSchema,
  DATE_INPUT_MAX,
  DATE_INPUT_MIN,
  dateInputSchema,
  EmailSchema,
  emailProblem,
  MoneySchema,
  ORG_ACTIVITY_MAX_ENTRIES,
  ORG_INVITE_MAX_PEOPLE,
  ORG_PERMISSIONS,
  ORG_ROLES,
  OrgPermissionSchema,
  OrgRoleSchema,
  PLANS,
  PersonSchema,
  PlanSchema,
  SERVICE_NAMES,
  TOOL_CONTRACTS,
  TOOL_LOGS_MAX_LINES,
  TOOL_NAMES,
  UserActionSchema,
  VISIBILITIES,
  VisibilitySchema,
  ai_key,
  billing,
  buy_domain,
  company_domain,
  company_domain_set,
  custom_domain,
  custom_domains,
  defineTool,
  delete_tool,
  domain_status,
  find_domain,
  getToolContract,
  isToolName,
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
} from "./contracts/index.ts";
export type {
  AiKeyChoice,
  AiKeyInput,
  AiKeyOutput,
  AiKeyScope,
  BillingInput,
  BillingOutput,
  BillingState,
  BuyDomainInput,
  BuyDomainOutput,
  ClientKind,
  CompanyDomainInput,
  CompanyDomainOutput,
  CompanyDomainSetInput,
  CompanyDomainSetOutput,
  CustomDomainInput,
  CustomDomainOutput,
  CustomDomainsInput,
  CustomDomainsOutput,
  DeleteToolInput,
  DeleteToolOutput,
  DnsRecord,
  DomainStatusInput,
  DomainStatusOutput,
  FindDomainInput,
  FindDomainOutput,
  ListToolsInput,
  ListToolsOutput,
  Money,
  OrgActivityInput,
  OrgActivityOutput,
  OrgAppPauseInput,
  OrgAppPauseOutput,
  OrgAppsInput,
  OrgAppsOutput,
  OrgInput,
  OrgInviteInput,
  OrgInviteOutput,
  OrgMemberUpdateInput,
  OrgMemberUpdateOutput,
  OrgMembersInput,
  OrgMembersOutput,
  OrgOutput,
  OrgPermission,
  OrgRole,
  OrgSetupInput,
  OrgSetupOutput,
  Plan,
  PublishInput,
  PublishOutput,
  RollbackInput,
  RollbackOutput,
  ServiceDocsInput,
  ServiceDocsOutput,
  ServiceName,
  ShareInput,
  ShareOutput,
  ToolAiInput,
  ToolAiOutput,
  ToolAnnotations,
  ToolClass,
  ToolContract,
  ToolContractOptions,
  ToolDataInput,
  ToolDataOutput,
  ToolInput,
  ToolLogsInput,
  ToolLogsOutput,
  ToolName,
  ToolOutput,
  ToolSecretInput,
  ToolSecretOutput,
  ToolStatsInput,
  ToolStatsOutput,
  UserAction,
  Visibility,
  WhoamiInput,
  WhoamiOutput,
} from "./contracts/index.ts";
export { databaseUnavailableMessage, isDatabaseUnavailable } from "./db-errors.ts";
