import type { Logger } from "@hatch/platform";
import { and, asc, eq, gt, ne, sql } from "drizzle-orm";
import type { AppsContext } from "../context.ts";
import { aiKeys, secrets } from "../db/schema.ts";
import { aiKeyAad, secretAad } from "./sealed.ts";

// Key rotation: SECRETS_KEYS="new:…,old:…" seals with the first key and opens with any. At start the apps service
// re-seals every row still under another key, a batch at a time, so the old key can be dropped from SECRETS_KEYS
// after a start that logged no failures. Each row is updated only if it still holds what was read (a value set
// meanwhile is already under the new key). Logs carry counts and key ids, never a value.

export interface RotationCounts {
  resealed: number;
  /** Rows that did not open with any configured key (their key was dropped too early, or the row was altered). */
  failed: number;
}

const BATCH = 100;

/** Re-seals secrets and AI keys not under the sealer's current key. */
export async function resealStaleRows(
  apps: Pick<AppsContext, "db" | "sealer">,
  log: Logger,
  batchSize = BATCH,
): Promise<{ secrets: RotationCounts; aiKeys: RotationCounts }> {
  const current = apps.sealer.currentKeyId;
  // Rows that fail stay under their old key, so each table is paged by its primary key (never re-read from the
  // start, which would read the failed rows forever).
  const secretCounts = await inBatches<{ appId: string; name: string }>(async (after) => {
    const rows = await apps.db
      .select({ appId: secrets.appId, name: secrets.name, keyId: secrets.keyId, sealed: secrets.sealed })
      .from(secrets)
      .where(
        and(
          ne(secrets.keyId, current),
          after ? sql`(${secrets.appId}, ${secrets.name}) > (${after.appId}, ${after.name})` : undefined,
        ),
      )
      .orderBy(asc(secrets.appId), asc(secrets.name))
      .limit(batchSize);
    const failed = await resealEach(
      apps,
      rows,
      (row) => secretAad(row.appId, row.name),
      (row, fresh) =>
        apps.db
          .update(secrets)
          .set(fresh)
          .where(and(eq(secrets.appId, row.appId), eq(secrets.name, row.name), eq(secrets.sealed, row.sealed))),
    );
    return { count: rows.length, failed, next: rows.length < batchSize ? null : (rows.at(-1) ?? null) };
  });
  const keyCounts = await inBatches<string>(async (after) => {
    const rows = await apps.db
      .select({
        id: aiKeys.id,
        scope: aiKeys.scope,
        ownerId: aiKeys.ownerId,
        provider: aiKeys.provider,
        keyId: aiKeys.keyId,
        sealed: aiKeys.sealed,
      })
      .from(aiKeys)
      .where(and(ne(aiKeys.keyId, current), after ? gt(aiKeys.id, after) : undefined))
      .orderBy(asc(aiKeys.id))
      .limit(batchSize);
    const failed = await resealEach(
      apps,
      rows,
      (row) => aiKeyAad(row.scope, row.ownerId, row.provider),
      (row, fresh) =>
        apps.db
          .update(aiKeys)
          .set(fresh)
          .where(and(eq(aiKeys.id, row.id), eq(aiKeys.sealed, row.sealed))),
    );
    return { count: rows.length, failed, next: rows.length < batchSize ? null : (rows.at(-1)?.id ?? null) };
  });
  const result = { secrets: secretCounts, aiKeys: keyCounts };
  if (secretCounts.resealed + secretCounts.failed + keyCounts.resealed + keyCounts.failed > 0) {
    log.info("re-sealed secrets and AI keys under the current key", { keyId: current, ...flatten(result) });
  }
  if (secretCounts.failed + keyCounts.failed > 0) {
    log.error(
      "some sealed rows open with no configured key: keep their old key in SECRETS_KEYS or have them set again",
      flatten(result),
    );
  }
  return result;
}

/** Re-seals each row (updated only if it still holds what was read); returns how many did not open. */
async function resealEach<R extends { keyId: string; sealed: string }>(
  apps: Pick<AppsContext, "sealer">,
  rows: R[],
  aadOf: (row: R) => string,
  write: (row: R, fresh: { keyId: string; sealed: string }) => Promise<unknown>,
): Promise<number> {
  let failed = 0;
  for (const row of rows) {
    const fresh = reseal(apps, row, aadOf(row));
    if (fresh) await write(row, fresh);
    else failed++;
  }
  return failed;
}

function reseal(
  apps: Pick<AppsContext, "sealer">,
  row: { keyId: string; sealed: string },
  aad: string,
): { keyId: string; sealed: string } | null {
  let plain: string;
  try {
    plain = apps.sealer.open(row, aad);
  } catch {
    return null;
  }
  return apps.sealer.seal(plain, aad);
}

interface Page<K> {
  count: number;
  failed: number;
  /** Where the next page starts (after this key); null after a short page. */
  next: K | null;
}

async function inBatches<K>(page: (after: K | null) => Promise<Page<K>>): Promise<RotationCounts> {
  const counts: RotationCounts = { resealed: 0, failed: 0 };
  let after: K | null = null;
  for (;;) {
    const done: Page<K> = await page(after);
    counts.resealed += done.count - done.failed;
    counts.failed += done.failed;
    if (done.next === null) return counts;
    after = done.next;
  }
}

function flatten(result: { secrets: RotationCounts; aiKeys: RotationCounts }): Record<string, number> {
  return {
    secretsResealed: result.secrets.resealed,
    secretsFailed: result.secrets.failed,
    aiKeysResealed: result.aiKeys.resealed,
    aiKeysFailed: result.aiKeys.failed,
  };
}
