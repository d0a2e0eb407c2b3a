import type { QuickJSWASMModule } from "quickjs-emscripten";
import { Instance } from "./instance.ts";
import type { RequestHooks, SandboxLimits } from "./types.ts";

// Warm instances, per app version, inside one sandbox worker. What is reused between requests, and why it is safe:
// - The runtime and its context, with the prelude and the app's evaluated module. So module-level variables persist
//   between requests of the same app version, as in a Workers isolate: a cache kept in a module global works, and
//   any request of that version (any viewer) may see it. Nothing crosses versions or apps: an instance is keyed by
//   app id and version, and each is a QuickJS runtime of its own (own heap, no shared objects).
// - Never reused: the request, the env object (built per request, and its host calls check the request's number,
//   so an env kept in a global from an earlier request is refused), timers and host calls (cleared and dropped when
//   the request ends, so nothing of one request runs during another).
// An instance runs one request at a time. It is thrown away after a CPU, memory or wall-time kill, when its
// module failed to load, when idle too long (so an old version's copies go some minutes after a publish), or to
// make room (least recently used first).

export interface PoolOptions {
  /** Instances of one app version at most (concurrent requests beyond wait for one). */
  perVersion: number;
  /** Instances in this worker at most; the least recently used idle one makes room. */
  total: number;
  idleMs: number;
}

export interface ModuleSource {
  key: string;
  source: string;
  filename: string;
}

interface Slot {
  idle: Instance[];
  busy: number;
  waiting: (() => void)[];
}

export class InstancePool {
  private readonly slots = new Map<string, Slot>();
  private count = 0;
  private readonly sweeper: ReturnType<typeof setInterval>;

  constructor(
    private readonly module: QuickJSWASMModule,
    private readonly limits: SandboxLimits,
    private readonly options: PoolOptions,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(1000, Math.floor(options.idleMs / 2)));
    this.sweeper.unref?.();
  }

  get size(): number {
    return this.count;
  }

  /** An instance of this version for one request: an idle one, a new one, or the next one freed. */
  async acquire(module: ModuleSource, hooks: RequestHooks): Promise<Instance> {
    const slot = this.slotOf(module.key);
    for (;;) {
      const ready = slot.idle.pop();
      if (ready) {
        slot.busy++;
        return ready;
      }
      if (slot.busy < this.options.perVersion) {
        if (this.count >= this.options.total) this.evictOne();
        slot.busy++;
        this.count++;
        try {
          return Instance.create(this.module, module.source, module.filename, this.limits, hooks);
        } catch (error) {
          slot.busy--;
          this.count--;
          this.wake(slot);
          throw error;
        }
      }
      await new Promise<void>((resolve) => slot.waiting.push(resolve));
    }
  }

  /** Gives an instance back after its request; a broken one is freed. */
  release(key: string, instance: Instance): void {
    const slot = this.slotOf(key);
    slot.busy--;
    if (instance.broken) {
      this.count--;
      instance.dispose();
    } else {
      slot.idle.push(instance);
    }
    this.wake(slot);
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const slot of this.slots.values()) this.freeIdle(slot);
  }

  private slotOf(key: string): Slot {
    let slot = this.slots.get(key);
    if (!slot) this.slots.set(key, (slot = { idle: [], busy: 0, waiting: [] }));
    return slot;
  }

  private wake(slot: Slot): void {
    slot.waiting.shift()?.();
  }

  private freeIdle(slot: Slot): void {
    for (const instance of slot.idle.splice(0)) {
      this.count--;
      instance.dispose();
    }
  }

  /** Frees the least recently used idle instance of any version. */
  private evictOne(): void {
    let oldest: { slot: Slot; index: number; at: number } | null = null;
    for (const slot of this.slots.values()) {
      slot.idle.forEach((instance, index) => {
        if (!oldest || instance.lastUsed < oldest.at) oldest = { slot, index, at: instance.lastUsed };
      });
    }
    const found = oldest as { slot: Slot; index: number } | null;
    if (!found) return;
    const [instance] = found.slot.idle.splice(found.index, 1);
    this.count--;
    instance?.dispose();
  }

  private sweep(): void {
    const before = Date.now() - this.options.idleMs;
    for (const [key, slot] of this.slots) {
      const keep = slot.idle.filter((instance) => instance.lastUsed >= before);
      for (const instance of slot.idle) {
        if (instance.lastUsed < before) {
          this.count--;
          instance.dispose();
        }
      }
      slot.idle = keep;
      if (slot.idle.length === 0 && slot.busy === 0 && slot.waiting.length === 0) this.slots.delete(key);
    }
  }
}
