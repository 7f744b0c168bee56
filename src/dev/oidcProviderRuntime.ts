// oidc-provider names Node.js 22 LTS as its supported runtime and prints a warning when it is
// imported under Node.js 20, which this project supports (package.json engines) and whose suites run
// on it. oidc-provider serves only the development servers and tests here, so that one line is no
// news and is dropped; every other warning of oidc-provider's is printed as it was.
const UNSUPPORTED_RUNTIME = 'oidc-provider WARNING: Unsupported runtime.';

/** Drops that one warning from console.warn until the returned function puts console.warn back. */
export function dropRuntimeWarning(): () => void {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    // On a terminal the line is coloured: matched anywhere in it.
    if (typeof args[0] === 'string' && args[0].includes(UNSUPPORTED_RUNTIME)) return;
    warn(...args);
  };
  return () => {
    console.warn = warn;
  };
}

/** Runs `load`, an import that loads oidc-provider for the first time, with that one warning dropped. */
export async function withoutRuntimeWarning<T>(load: () => Promise<T>): Promise<T> {
  const restore = dropRuntimeWarning();
  try {
    return await load();
  } finally {
    restore();
  }
}
