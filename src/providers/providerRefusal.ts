import { InvalidInputError, UnavailableError, type AppError } from '../errors/appError.js';
import { isObject } from './conformers/responseFields.js';
import { plainText } from '../security/displayText.js';

const MAX_MESSAGE = 200;

/**
 * The provider answered this request with a refusal (a 4xx other than 401 and
 * 429): the operation was not done and doing it again gives the same answer,
 * so an accepted operation records it as its final, failed outcome.
 */
export class ProviderRefusedError extends InvalidInputError {
  override name = 'ProviderRefusedError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * The provider's own words in an error body, plain and bounded: GitHub's and
 * most REST APIs' `message`, `error.message` (Google, Microsoft Graph),
 * `error_description` and `error` (RFC 6749 §5.2), `detail` and `title`
 * (RFC 9457 problem details). Empty when the body says nothing readable.
 */
export function providerMessage(body: unknown): string {
  if (!isObject(body)) return '';
  const error = body['error'];
  const candidates = [
    body['message'],
    isObject(error) ? error['message'] : undefined,
    body['error_description'],
    body['detail'],
    body['title'],
    error,
  ];
  const found = candidates.find((value): value is string => typeof value === 'string' && plainText(value) !== '');
  return found === undefined ? '' : plainText(found).slice(0, MAX_MESSAGE);
}

/**
 * A provider's refusal of `what` (HTTP `status`, its error `body`) as a clear
 * tool error with the provider's message: 429 and 5xx say to try again later
 * (retryable, `unavailable`); anything else is the provider's answer to this
 * request (`invalid_input`).
 */
export function providerRefusal(provider: string, status: number, body: unknown, what: string): AppError {
  const message = providerMessage(body);
  const said = `HTTP ${status}${message ? `: ${message}` : ''}`;
  if (status === 429 || status >= 500)
    return new UnavailableError(`${provider} could not ${what} now (${said}). Try again later.`, { expose: true });
  return new ProviderRefusedError(`${provider} refused to ${what} (${said}).`, status);
}
