import { withoutRuntimeWarning } from '../../src/dev/oidcProviderRuntime.js';

// oidc-provider loaded once before a test file imports it, without its warning about Node.js 20
// (src/dev/oidcProviderRuntime.ts): later imports find it loaded and print nothing.
await withoutRuntimeWarning(() => import('oidc-provider'));
