// The one way Hatch bounds a wait: every "at most N ms" in the code is one of these two (no hand-made setTimeout race).

/**
 * `work`, or after `ms` the error `late()` makes. The work itself goes on (nothing here can cancel it): callers say so
 * where it matters (a write that may still land).
 */
export function withDeadline<T>(work: T | Promise<T>, ms: number, late: () => Error): Promise<T> {
  return race(work, ms, (_, reject) => reject(late()));
}

/** `work`, or after `ms` the value `fallback` (a wait that gives up quietly: a flush, a drain, a probe). */
export function withDeadlineOr<T, F>(work: T | Promise<T>, ms: number, fallback: F): Promise<T | F> {
  return race<T | F>(work, ms, (resolve) => resolve(fallback));
}

function race<T>(
  work: T | Promise<T>,
  ms: number,
  onLate: (resolve: (value: T) => void, reject: (error: Error) => void) => void,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<T>((resolve, reject) => {
    timer = setTimeout(() => onLate(resolve, reject), ms);
  });
  return Promise.race([Promise.resolve(work), expired]).finally(() => clearTimeout(timer));
}
