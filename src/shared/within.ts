/**
 * `promise`'s outcome if it settles within `ms` (its value, or its rejection), else undefined; a late
 * promise goes on, unawaited, and its later rejection is handled here.
 */
export function within<T>(promise: Promise<T>, ms: number): Promise<{ value: T } | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
  });
  return Promise.race([promise.then((value) => ({ value })), late]).finally(() => clearTimeout(timer));
}
