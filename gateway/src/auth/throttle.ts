import { MemoryRateCounter, type Logger, type RateCounter } from "@hatch/platform";

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

/** A growing delay: nothing for the first `free` failures, then `firstMs` doubling per failure up to `maxMs`. */
export interface DelayRule {
  windowMs: number;
  free: number;
  firstMs: number;
  maxMs: number;
}

/** Past this many failures in a window a counter stops counting; the delay is long at its maximum by then. */
const COUNT_CAP = 64;

/**
 * The limits. Sign-in failures only ever slow attempts down (held before the password is checked, never refused),
 * so nobody can lock anyone out: the right password always signs in, at most a few seconds later. The longest hold
 * stays under Bun's 10 s idle timeout. SIGN_IN_RULE says the same on the page.
 */
export const LIMITS = {
  /** Wrong passwords for one email from anywhere (many addresses guessing one account). */
  signInPerEmail: { windowMs: 15 * MINUTE, free: 3, firstMs: 250, maxMs: 3_000 },
  /** Wrong passwords for one email from one address. */
  signInPerEmailAndSource: { windowMs: 15 * MINUTE, free: 5, firstMs: 1_000, maxMs: 8_000 },
  /** Wrong passwords from one address, whatever the email (one address trying many accounts). */
  signInPerSource: { windowMs: 15 * MINUTE, free: 20, firstMs: 1_000, maxMs: 8_000 },
  /** Sign-up attempts from one address. */
  signUpPerSource: { count: 20, windowMs: 60 * MINUTE },
  /** Dynamic client registrations from one address. */
  registerPerSource: { count: 30, windowMs: 60 * MINUTE },
  /** Password reset requests from one address (orgs also limits the mails per email address). */
  resetPerSource: { count: 10, windowMs: 60 * MINUTE },
  /**
   * Client ID Metadata Documents fetched for one address (whoever opens an authorize link with a URL client id,
   * signed in or not); a document still fresh in the cache is not a fetch.
   */
  metadataFetchPerSource: { count: 30, windowMs: 60 * MINUTE },
  /** Documents fetched from one host name, whoever asks: what Hatch sends one site is bounded too. */
  metadataFetchPerHost: { count: 120, windowMs: 60 * MINUTE },
} as const satisfies Record<string, DelayRule | { count: number; windowMs: number }>;

export const SIGN_IN_RULE =
  "Wrong passwords never lock an account: after 3 wrong passwords for an email each try waits a little (up to 3 seconds), " +
  "and after 5 from one network (or 20 there for any email) tries from that network wait up to 8 seconds. " +
  "The right password always signs in.";

export function delayFor(rule: DelayRule, failuresBefore: number): number {
  if (failuresBefore < rule.free) return 0;
  return Math.min(rule.maxMs, rule.firstMs * 2 ** Math.min(failuresBefore - rule.free, 16));
}

/** Every throttle of the auth module, on the gateway's shared rate counter (in memory when none is given). */
export class AuthThrottles {
  /** Failure counters of sign-in; each sets a growing delay (see LIMITS), none refuses. */
  readonly signInPair: Throttle;
  readonly signInSource: Throttle;
  readonly signInEmail: Throttle;
  readonly signUpSource: Throttle;
  readonly registerSource: Throttle;
  readonly resetSource: Throttle;
  /** Wrong current passwords typed on the settings page, per user (a browser left signed in cannot guess on). */
  readonly currentPassword: Throttle;
  /** Client ID Metadata Document fetches, per requester address and per document host name. */
  readonly metadataSource: Throttle;
  readonly metadataHost: Throttle;

  constructor(counter: RateCounter | undefined, log: Logger, now: () => number = Date.now) {
    const shared = counter ?? new MemoryRateCounter(now);
    const make = (name: string, limit: number, windowMs: number) => new Throttle(shared, name, limit, windowMs, log);
    this.signInPair = make("signin-pair", COUNT_CAP, LIMITS.signInPerEmailAndSource.windowMs);
    this.signInSource = make("signin-source", COUNT_CAP, LIMITS.signInPerSource.windowMs);
    this.signInEmail = make("signin-email", COUNT_CAP, LIMITS.signInPerEmail.windowMs);
    this.signUpSource = make("signup-source", LIMITS.signUpPerSource.count, LIMITS.signUpPerSource.windowMs);
    this.registerSource = make("register-source", LIMITS.registerPerSource.count, LIMITS.registerPerSource.windowMs);
    this.resetSource = make("reset-source", LIMITS.resetPerSource.count, LIMITS.resetPerSource.windowMs);
    this.currentPassword = make("current-password", 10, 60 * MINUTE);
    const { metadataFetchPerSource: perSource, metadataFetchPerHost: perHost } = LIMITS;
    this.metadataSource = make("metadata-source", perSource.count, perSource.windowMs);
    this.metadataHost = make("metadata-host", perHost.count, perHost.windowMs);
  }

  /**
   * Counts a sign-in attempt as a failure up front (taken back on success) and returns how long to hold it, in ms:
   * the longest of the three rules. Counting first means parallel attempts see each other and wait longer.
   */
  async signInAttempt(email: string, source: string): Promise<number> {
    const pair = `${email}\n${source}`;
    const counted = [
      [this.signInEmail, email, LIMITS.signInPerEmail],
      [this.signInPair, pair, LIMITS.signInPerEmailAndSource],
      [this.signInSource, source, LIMITS.signInPerSource],
    ] as const;
    const delays = await Promise.all(
      counted.map(async ([throttle, key, rule]) => {
        await throttle.take(key);
        return delayFor(rule, (await throttle.count(key)) - 1);
      }),
    );
    return Math.max(...delays);
  }

  /** The right password: its attempt was not a failure, and this address and email start over. */
  async signInSucceeded(email: string, source: string): Promise<void> {
    await Promise.all([
      this.signInSource.undo(source),
      this.signInEmail.undo(email),
      this.signInPair.clear(`${email}\n${source}`),
    ]);
  }
}
