import { dropRuntimeWarning } from '../../src/dev/oidcProviderRuntime.js';

// A test process drops oidc-provider's warning about Node.js 20 (src/dev/oidcProviderRuntime.ts)
// for its whole life, without loading oidc-provider itself: most unit test files never use it.
dropRuntimeWarning();
