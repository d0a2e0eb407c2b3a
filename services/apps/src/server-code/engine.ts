import { newQuickJSWASMModule, RELEASE_SYNC, type QuickJSWASMModule } from "quickjs-emscripten";

// One QuickJS WebAssembly module per process (about 35 ms to load). Every sandbox is a runtime of its own inside it,
// with its own heap, memory limit and interrupt handler: runtimes share no JavaScript objects, so one app's code
// cannot reach another's. The synchronous release build: host calls are promises resolved from outside, never a
// suspended WebAssembly stack.

let loading: Promise<QuickJSWASMModule> | null = null;

export function quickJs(): Promise<QuickJSWASMModule> {
  loading ??= newQuickJSWASMModule(RELEASE_SYNC).catch((error: unknown) => {
    loading = null;
    throw error;
  });
  return loading;
}

/**
 * Whether a module's source compiles, without running it: null, or the syntax error with its line (e.g.
 * `SyntaxError: expecting ',' (api/index.js line 3)`). A throwaway runtime with small limits: the publish tool calls
 * it on code nobody has checked yet.
 */
export async function compileError(source: string, filename: string): Promise<string | null> {
  const module = await quickJs();
  const runtime = module.newRuntime();
  runtime.setMemoryLimit(64 * 1024 * 1024);
  runtime.setMaxStackSize(512 * 1024);
  const deadline = performance.now() + 2000;
  runtime.setInterruptHandler(() => performance.now() > deadline);
  const context = runtime.newContext();
  try {
    const result = context.evalCode(source, filename, { type: "module", compileOnly: true });
    if (!result.error) {
      result.value.dispose();
      return null;
    }
    const error = context.dump(result.error) as { name?: string; message?: string; lineNumber?: number } | undefined;
    result.error.dispose();
    const line = typeof error?.lineNumber === "number" ? ` (${filename} line ${error.lineNumber})` : "";
    return `${error?.name ?? "Error"}: ${error?.message ?? "the module could not be compiled"}${line}`;
  } finally {
    context.dispose();
    runtime.dispose();
  }
}
