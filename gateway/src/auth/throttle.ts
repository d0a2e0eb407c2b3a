/**
 * Counts events per key (an address, an email and address) inside a sliding window. Per gateway instance and in
 * memory, bounded: past `maxKeys` the least recently hit key is dropped. It bounds guessing per instance; a
 * deployment with many instances would move it to shared storage.
 */
export class SlidingWindow {
  private readonly hits = new Map<string, number[]>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly maxKeys = 50_000,
  ) {}

  /** Events for the key inside the window (at most `limit` are kept). */
  count(key: string, now: number): number {
    return this.recent(key, now).length;
  }

  /** Seconds until the key is under its limit again; 0 when it may go on now. */
  retryAfter(key: string, now: number): number {
    const recent = this.recent(key, now);
    if (recent.length < this.limit) return 0;
    return Math.max(1, Math.ceil((recent[0]! + this.windowMs - now) / 1000));
  }

  hit(key: string, now: number): void {
    const recent = this.recent(key, now);
    recent.push(now);
    this.hits.delete(key);
    this.hits.set(key, recent.slice(-this.limit));
    if (this.hits.size > this.maxKeys) this.hits.delete(this.hits.keys().next().value as string);
  }

  /** Takes back the newest event of the key (an attempt counted up front that turned out fine). */
  undo(key: string): void {
    this.hits.get(key)?.pop();
  }

  clear(key: string): void {
    this.hits.delete(key);
  }

  private recent(key: string, now: number): number[] {
    return (this.hits.get(key) ?? []).filter((at) => now - at < this.windowMs);
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

/** Every throttle of the auth module; one set per gateway instance. */
export class AuthThrottles {
  readonly signInPair = new SlidingWindow(LIMITS.signInPerEmailAndSource.count, LIMITS.signInPerEmailAndSource.windowMs);
  readonly signInSource = new SlidingWindow(LIMITS.signInPerSource.count, LIMITS.signInPerSource.windowMs);
  readonly signUpSource = new SlidingWindow(LIMITS.signUpPerSource.count, LIMITS.signUpPerSource.windowMs);
  readonly registerSource = new SlidingWindow(LIMITS.registerPerSource.count, LIMITS.registerPerSource.windowMs);
  // Only the count matters (it sets the delay); keep enough failures to reach the longest delay.
  readonly signInEmail = new SlidingWindow(16, LIMITS.signInPerEmail.windowMs);

  /** How long to hold an attempt on this email before checking it: 0, then 250 ms doubling up to 3 s. */
  signInDelayMs(email: string, now: number): number {
    const { freeFailures, firstDelayMs, maxDelayMs } = LIMITS.signInPerEmail;
    const failures = this.signInEmail.count(email, now);
    if (failures < freeFailures) return 0;
    return Math.min(maxDelayMs, firstDelayMs * 2 ** (failures - freeFailures));
  }
}
