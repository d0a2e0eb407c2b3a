import { z } from "zod";
import { requestTraced } from "./bus/traced.ts";
import { BusError, decodeJson, encodeJson, type Bus } from "./bus/types.ts";
import { RpcReplySchema, ToolError } from "@hatch/contracts";

export interface RpcCallOptions {
  ctx?: string;
  /**
   * The context signed again for a copy that reads only the versions `read` (a rolling deploy), or null when the
   * caller knows none of them: the call is sent once more with it.
   */
  resign?: (read: readonly number[]) => string | null;
  timeoutMs?: number;
  requestId?: string;
  traceparent?: string;
}

/**
 * Calls `rpc.<service>.<method>` and returns its result, parsed by `schema`. A service that is down or slow
 * becomes a ToolError `unavailable` naming the service; an error reply becomes the ToolError it carried.
 */
export async function callRpc<S extends z.ZodType>(
  bus: Bus,
  service: string,
  method: string,
  input: unknown,
  schema: S,
  options: RpcCallOptions = {},
): Promise<z.infer<S>> {
  const send = async (ctx: string | undefined) => {
    try {
      const reply = await requestTraced(bus, `rpc.${service}.${method}`, encodeJson({ ctx, input }), {
        timeoutMs: options.timeoutMs ?? 5_000,
        requestId: options.requestId,
        traceparent: options.traceparent,
      });
      return RpcReplySchema.safeParse(decodeJson(reply.data));
    } catch (error) {
      if (error instanceof BusError) throw unavailable(service);
      throw error;
    }
  };
  let reply = await send(options.ctx);
  if (reply.success && !reply.data.ok && reply.data.accepts && options.resign) {
    const again = options.resign(reply.data.accepts.ctx);
    if (again) reply = await send(again);
  }
  if (!reply.success) throw new ToolError("internal", `The ${service} service sent a reply Hatch could not read.`);
  if (!reply.data.ok) throw new ToolError(reply.data.error.code, reply.data.error.message);
  const result = schema.safeParse(reply.data.result);
  if (!result.success) throw new ToolError("internal", `The ${service} service sent a reply Hatch could not read.`);
  return result.data;
}

export function unavailable(service: string): ToolError {
  return new ToolError(
    "unavailable",
    `The ${service} service is not answering right now. Wait a minute and try again; if it keeps happening, the Hatch service may be down.`,
  );
}
