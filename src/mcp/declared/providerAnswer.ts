import { AppError } from '../../errors/appError.js';
import { providerRefusal } from '../../providers/providerRefusal.js';
import { readBoundedBody } from '../../shared/boundedBody.js';

// What a declared tool makes of the provider's answer, by status, built in
// (not configurable): 2xx is the answer to pick from; 401 and redirects never
// get here (the bound fetch forgets the connection, or refuses to follow);
// 403, 404, 409, 422 and any other status are the provider's refusal with its
// message; 429 and 5xx say to try again (providers/providerRefusal.ts).

// An error body is read for its message only.
const MAX_ERROR_BYTES = 64 * 1024;

/**
 * The JSON of a 2xx answer (undefined for an empty body, or when the tool
 * picks no field and so `json` is false); throws the refusal, or a clear
 * error for an answer over `maxBytes` or not JSON.
 */
export async function readAnswer(
  response: Response,
  options: { provider: string; tool: string; maxBytes: number; json: boolean },
): Promise<unknown> {
  const what = `run ${options.tool}`;
  if (response.status < 200 || response.status > 299) {
    const body = await readBoundedBody(response, MAX_ERROR_BYTES);
    throw providerRefusal(options.provider, response.status, parseJson(body), what);
  }
  const body = await readBoundedBody(response, options.maxBytes);
  if (body === undefined) {
    throw new AppError(
      'payload_too_large',
      `${options.provider} answered ${options.tool} with more than ${options.maxBytes} bytes, over the tool's response.maxBytes; nothing of it was kept.`,
    );
  }
  if (body.length === 0 || !options.json) return undefined;
  const json = parseJson(body);
  if (json === undefined)
    throw new AppError(
      'upstream_auth_failed',
      `${options.provider} answered ${options.tool} (HTTP ${response.status}) with a body that is not JSON.`,
      { expose: true },
    );
  return json;
}

function parseJson(body: Buffer | undefined): unknown {
  if (body === undefined || body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
