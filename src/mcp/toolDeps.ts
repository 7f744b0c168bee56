import type { Pool } from '../db/pool.js';
import type { Fetch } from '../shared/httpClient.js';
import type { ConnectionToolDeps } from './connectionTool.js';
import type { FormGuard } from './formGuard.js';
import type { RequestStateCodec } from './requestState.js';

/** What tool handlers get: plain values and functions, no singletons. */
export interface McpToolDeps {
  pool: Pool;
  requestState: RequestStateCodec;
  connection: ConnectionToolDeps;
  /** For third-party APIs (verifies TLS; nock-visible in tests). */
  fetch: Fetch;
  /** The form audit every form elicitation passes before it is sent. */
  forms: FormGuard;
}
