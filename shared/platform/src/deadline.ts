/**
 * `work`, or after `ms` the error `late()` makes. The work itself goes on (nothing here can cancel it): callers say so
 * where it matters (a write that may still land).
 */
export function withDeadline<T>(work: T | Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  return Promise.race([Promise.resolve(work), expired]).finally(() => clearTimeout(timer));
}
