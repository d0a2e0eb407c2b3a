import { describe, expect, test } from "bun:test";
import type { KV } from "@nats-io/kv";
import { LazyKv } from "../src/bus/lazy-kv.ts";

describe("LazyKv", () => {
  test("opens once for every use, again after a failed open or forget()", async () => {
    const handle = {} as KV;
    let opens = 0;
    const lazy = new LazyKv(async () => {
      opens++;
      if (opens === 1) throw new Error("no responders");
      return handle;
    });
    await expect(lazy.get()).rejects.toThrow("no responders");
    expect(await Promise.all([lazy.get(), lazy.get()])).toEqual([handle, handle]);
    expect(opens).toBe(2);
    lazy.forget();
    expect(await lazy.get()).toBe(handle);
    expect(opens).toBe(3);
  });
});
