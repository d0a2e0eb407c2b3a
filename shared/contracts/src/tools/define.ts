import { z } from "zod";

/** The four services that own tools. The gateway routes `tools.<service>.<tool>` by this. */
export const SERVICE_NAMES = ["apps", "domains", "billing", "orgs"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/**
 * What a client is, read loosely from MCP `initialize` clientInfo. `chatgpt` matters: its app rules forbid
 * selling digital services in the chat, so some tools are hidden from it (interface spec, client-specific difference).
 */
export const CLIENT_KINDS = ["claude", "chatgpt", "cursor", "vscode", "cli", "other"] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** The spec's three classes: a tool only reads, changes something, or can delete something. */
export type ToolClass = "read" | "change" | "delete";

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface ToolContractOptions<I extends z.ZodObject, O extends z.ZodObject> {
  name: string;
  title: string;
  /** Written for an AI: when to use it, what it needs, what it returns. */
  description: string;
  service: ServiceName;
  class: ToolClass;
  /** Calling again with the same input has no further effect. Read tools are always idempotent. */
  idempotent?: boolean;
  /** The tool reaches beyond Hatch (the public web, a registrar, a payment provider, email). */
  openWorld?: boolean;
  input: I;
  output: O;
  /** How long the gateway waits for the owning service. */
  timeoutMs?: number;
  /** Client kinds that are never offered this tool. */
  hiddenFor?: readonly ClientKind[];
  /**
   * Size limits of a valid input, or null: the gateway answers limit_exceeded with this message before the call
   * goes on the bus (whose messages have a size limit). The owning service checks the same limits again.
   */
  limitProblem?(input: z.infer<I>): string | null;
  /**
   * Input keys (dotted paths for nested ones) added after the tool first shipped whose absence keeps the old
   * behaviour (a hint, a presentation option): during a rolling deploy a copy that does not know one drops it. A new key
   * not listed here is refused by such a copy with a retryable `unavailable` (gateway/DESIGN.md, "Rolling deploys").
   */
  ignorable?: readonly string[];
  /**
   * What an MCP client gets as structuredContent, when the service's data (which the dashboard reads whole) says more
   * than the text: its ids, states and numbers, none of them missing from the text, and never larger than it (ChatGPT
   * reads both, so each byte here is paid twice). The gateway applies it to finished results; a question
   * (status needs_user) keeps its data. Without it the data goes as it is.
   */
  structured?(data: z.infer<O>): Record<string, unknown>;
}

export interface ToolContract<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly service: ServiceName;
  readonly class: ToolClass;
  readonly annotations: ToolAnnotations;
  readonly input: I;
  readonly output: O;
  readonly timeoutMs: number;
  readonly hiddenFor: readonly ClientKind[];
  readonly ignorable: readonly string[];
  limitProblem?(input: z.infer<I>): string | null;
  structured?(data: z.infer<O>): Record<string, unknown>;
}

export const DEFAULT_TOOL_TIMEOUT_MS = 10_000;

export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  options: ToolContractOptions<I, O>,
): ToolContract<I, O> {
  if (!/^[a-z][a-z0-9_]*$/.test(options.name)) throw new Error(`tool name "${options.name}" must be snake_case`);
  const readOnly = options.class === "read";
  return {
    name: options.name,
    title: options.title,
    description: options.description,
    service: options.service,
    class: options.class,
    annotations: {
      readOnlyHint: readOnly,
      destructiveHint: options.class === "delete",
      idempotentHint: readOnly ? true : (options.idempotent ?? false),
      openWorldHint: options.openWorld ?? false,
    },
    input: options.input,
    output: options.output,
    timeoutMs: options.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    hiddenFor: options.hiddenFor ?? [],
    ignorable: options.ignorable ?? [],
    limitProblem: options.limitProblem,
    structured: options.structured,
  };
}

export type ToolInput<C> = C extends ToolContract<infer I, z.ZodObject> ? z.infer<I> : never;
export type ToolOutput<C> = C extends ToolContract<z.ZodObject, infer O> ? z.infer<O> : never;
