/// <reference lib="dom" />
// The host side of MCP Apps in a test page, as a client runs it: the extension's own AppBridge talking to the view in a
// frame over postMessage. The page's window gets `showView(src, args, result)`; the view's tool calls and links go to
// functions the test exposes (`hostCallTool`, `hostOpenLink`), which call Hatch with the SDK's real client.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

type HostWindow = Window & {
  hostCallTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<object>;
  hostOpenLink(url: string): Promise<void>;
  showView(src: string, args: Record<string, unknown>, result: object): Promise<void>;
};
const host = window as unknown as HostWindow;

host.showView = async (src, args, result) => {
  const old = document.getElementById("view");
  const frame = document.createElement("iframe");
  frame.id = "view";
  frame.title = "Hatch view";
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin");
  frame.style.cssText = "width:100%;height:600px;border:1px solid #ccc";
  if (old) old.replaceWith(frame);
  else document.body.append(frame);
  const bridge = new AppBridge(
    null,
    { name: "hatch-test-host", version: "1.0.0" },
    { openLinks: {}, serverTools: {}, logging: {} },
  );
  bridge.oncalltool = async (params) => (await host.hostCallTool(params)) as never;
  bridge.onopenlink = async ({ url }) => {
    await host.hostOpenLink(url);
    return {};
  };
  bridge.onsizechange = ({ height }) => {
    if (height) frame.style.height = `${Math.min(height, 1600)}px`;
  };
  const initialized = new Promise<void>((resolve) => {
    bridge.oninitialized = () => resolve();
  });
  // The frame's window stays the same object across its navigation: the bridge listens before the view loads.
  const view = frame.contentWindow as Window;
  await bridge.connect(new PostMessageTransport(view, view));
  frame.src = src;
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result as never);
};
