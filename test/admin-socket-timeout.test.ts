import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { adminSocketPaths, callAdminSocket } from "../scripts/admin-socket.ts";

// `bun run admin` beside a dev server that stopped answering (hung, or stuck on its database): it gives up after its
// answer timeout (30 s; shorter here) and says why, instead of waiting forever.
test("an admin socket that never answers: the call gives up after its timeout and says so", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "hatch-admin-hung-"));
  const paths = adminSocketPaths(dataDir);
  mkdirSync(dirname(paths.socket), { recursive: true });
  writeFileSync(paths.token, "token-of-the-hung-server\n");
  let asked = 0;
  const hung = Bun.serve({
    unix: paths.socket,
    fetch: () => {
      asked++;
      return new Promise<Response>(() => {});
    },
  });
  try {
    const call = await callAdminSocket(
      dataDir,
      { command: "user:create", email: "a@example.com", password: "long enough pw", name: "A" },
      300,
    );
    expect(asked).toBe(1);
    expect(call).toEqual({ answered: false, reason: "its admin socket gave no answer in 0.3 s" });
  } finally {
    hung.stop(true);
    rmSync(dataDir, { recursive: true, force: true });
  }
});
