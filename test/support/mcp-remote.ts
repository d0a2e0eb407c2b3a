import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export interface McpRemote {
  /** Its stdio, for the SDK's Client. */
  transport: StdioClientTransport;
  /** The sign-in URL it prints (the person opens it; here a test's browser does). */
  printedUrl: Promise<string>;
  /** All it has written to stderr so far. */
  said(): string;
}

/**
 * mcp-remote (the stdio bridge many desktop clients use) run from `script` against `mcpUrl`, over plain HTTP. Its
 * tokens go to `home`; BROWSER=true makes its "open a browser" a no-op (the test is the browser).
 */
export function mcpRemote(script: string, mcpUrl: string, home: string, args: string[] = []): McpRemote {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [script, mcpUrl, "--allow-http", ...args],
    env: { ...(process.env as Record<string, string>), HOME: home, MCP_REMOTE_CONFIG_DIR: home, BROWSER: "true" },
    stderr: "pipe",
  });
  let said = "";
  const printedUrl = new Promise<string>((resolve) => {
    transport.stderr?.on("data", (chunk: Buffer) => {
      said += chunk.toString();
      const url = /(http:\/\/\S+\/oauth\/authorize\?\S+)/.exec(said)?.[1];
      if (url) resolve(url);
    });
  });
  return { transport, printedUrl, said: () => said };
}
