import { MemoryRateCounter, type Logger, type RateCounter } from "@hatch/shared";

/**
 * One limit on the shared rate counter (JetStream key-value on NATS, so every gateway copy sees the same counts;
 * memory in `bun run dev`): fixed windows of `windowMs` per key. When the counter cannot be reached the limit lets
 * the attempt through and says so in the log: a counter outage must not keep people from signing in.
 */
export class Throttle {
  constructor(
    private readonly counter: RateCounter,
    private readonly name: string,
    readonly limit: number,
    readonly windowMs: number,
    private readonly log: Logger,
  ) {}

  /** Counts one attempt when under the limit; otherwise the seconds to wait (nothing counted). */
  async take(key: string): Promise<number> {
    const decision = await this.safely(() => this.counter.take(this.key(key), this.limit, this.windowMs), {
      allowed: true,
      retryAfterSeconds: 0,
    });
    return decision.allowed ? 0 : decision.retryAfterSeconds;
  }

  count(key: string): Promise<number> {
    return this.safely(() => this.counter.peek(this.key(key), this.windowMs), 0);
  }

  /** Takes back an attempt counted up front that turned out fine. */
  undo(key: string): Promise<void> {
    return this.safely(() => this.counter.release(this.key(key), this.windowMs), undefined);
  }

  clear(key: string): Promise<void> {
    return this.safely(() => this.counter.reset(this.key(key), this.windowMs), undefined);
  }

  private key(key: string): string {
    return `auth:${this.name}:${key}`;
  }

  private async safely<T>(run: () => Promise<T>, fallback: T): Promise<T> {
    try {
      return await run();
    } catch (error) {
      this.log.warn("throttle not counted", { throttle: this.name, error });
      return fallback;
    }
  }
}

const MINUTE = 60_000;

/** The limits; the sign-in page states the rule of the first and last in one sentence (SIGN_IN_RULE). */
export const LIMITS = {
  /** Wrong passwords for one email from one address: then that address waits before trying that email again. */
  signInPerEmailAndSource: { count: 5, windowMs: 15 * MINUTE },
  /** Wrong passwords from one address, whatever the email (one address trying many accounts). */
  signInPerSource: { count: 20, windowMs: 15 * MINUTE },
  /** Sign-up attempts from one address. */
  signUpPerSource: { count: 20, windowMs: 60 * MINUTE },
  /** Dynamic client registrations from one address. */
  registerPerSource: { count: 30, windowMs: 60 * MINUTE },
  /** Wrong passwords for one email from anywhere: never a lock, only a growing delay of each attempt. */
  signInPerEmail: { windowMs: 15 * MINUTE, freeFailures: 3, firstDelayMs: 250, maxDelayMs: 3_000 },
} as const;

export const SIGN_IN_RULE =
  "After 5 wrong passwords for an email, the network they came from waits 15 minutes before trying that email again; " +
  "the right password from anywhere else always works, at most a few seconds slower.";

/** Every throttle of the auth module, on the gateway's shared rate counter (in memory when none is given). */
export class AuthThrottles {
  readonly signInPair: Throttle;
  readonly signInSource: Throttle;
  readonly signUpSource: Throttle;
  readonly registerSource: Throttle;
  // Only the count matters (it sets the delay); keep enough failures to reach the longest delay.
  readonly signInEmail: Throttle;

  constructor(counter: RateCounter | undefined, log: Logger, now: () => number = Date.now) {
    const shared = counter ?? new MemoryRateCounter(now);
    const make = (name: string, limit: number, windowMs: number) => new Throttle(shared, name, limit, windowMs, log);
    this.signInPair = make(
      "signin-pair",
      LIMITS.signInPerEmailAndSource.count,
      LIMITS.signInPerEmailAndSource.windowMs,
    );
    this.signInSource = make("signin-source", LIMITS.signInPerSource.count, LIMITS.signInPerSource.windowMs);
    this.signUpSource = make("signup-source", LIMITS.signUpPerSource.count, LIMITS.signUpPerSource.windowMs);
    this.registerSource = make("register-source", LIMITS.registerPerSource.count, LIMITS.registerPerSource.windowMs);
    this.signInEmail = make("signin-email", 16, LIMITS.signInPerEmail.windowMs);
  }

  /** How long to hold an attempt on this email before checking it: 0, then 250 ms doubling up to 3 s. */
  async signInDelayMs(email: string): Promise<number> {
    const { freeFailures, firstDelayMs, maxDelayMs } = LIMITS.signInPerEmail;
    const failures = await this.signInEmail.count(email);
    if (failures < freeFailures) return 0;
    return Math.min(maxDelayMs, firstDelayMs * 2 ** (failures - freeFailures));
  }
}
