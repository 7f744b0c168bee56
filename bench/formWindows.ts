import type { BrokerForm } from './brokerModules.js';
import type { LoadResult } from './load.js';

// bench:mcp's broker windows on both code forms: two per form, in the order tsx, compiled,
// compiled, tsx, so that a machine getting busier or quieter, and whatever the first window
// leaves behind in the process (garbage, warm caches), weigh on both forms alike.

const ORDER: readonly BrokerForm[] = ['tsx', 'compiled', 'compiled', 'tsx'];

/** Each form's windows combined; `measure` runs one window on the form `use` has switched to. */
export async function measureBothForms(
  use: (form: BrokerForm) => void,
  measure: (form: BrokerForm) => Promise<LoadResult>,
): Promise<Record<BrokerForm, LoadResult>> {
  const windows: Record<BrokerForm, LoadResult[]> = { tsx: [], compiled: [] };
  for (const form of ORDER) {
    use(form);
    windows[form].push(await measure(form));
  }
  use('tsx');
  return { tsx: combineWindows(windows.tsx), compiled: combineWindows(windows.compiled) };
}

/** Requests, time and CPU add up over windows; a window's percentiles do not, so they are averaged. */
export function combineWindows(windows: readonly LoadResult[]): LoadResult {
  const requests = windows.reduce((sum, w) => sum + w.requests, 0);
  const seconds = windows.reduce((sum, w) => sum + w.seconds, 0);
  const mean = (pick: (w: LoadResult) => number) => windows.reduce((sum, w) => sum + pick(w), 0) / windows.length;
  const perRequest = (pick: (w: LoadResult) => number | undefined) =>
    windows.reduce((sum, w) => sum + (pick(w) ?? 0) * w.requests, 0) / Math.max(1, requests);
  const other = windows.every((w) => w.otherCpuUsPerRequest !== undefined);
  return {
    requests,
    seconds,
    requestsPerSecond: requests / seconds,
    p50Ms: mean((w) => w.p50Ms),
    p99Ms: mean((w) => w.p99Ms),
    errors: windows.reduce((sum, w) => sum + w.errors, 0),
    errorSamples: windows.flatMap((w) => w.errorSamples).slice(0, 10),
    serverCpuUsPerRequest: perRequest((w) => w.serverCpuUsPerRequest),
    ...(other && { otherCpuUsPerRequest: perRequest((w) => w.otherCpuUsPerRequest) }),
  };
}
