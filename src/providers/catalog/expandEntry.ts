import { checkUrl, type UrlPolicy, UrlPolicyError } from '../../security/urlPolicy.js';
import {
  anchored,
  type CatalogEntry,
  CLIENT_ID_PLACEHOLDER,
  PLACEHOLDER,
  placeholders,
  urlTemplates,
} from './catalogEntry.js';

/** A catalog entry with every template filled: the endpoints one deployment talks to. */
export type ExpandedEntry = Omit<CatalogEntry, 'params' | 'derived'> & {
  /** The parameter values used, defaults included. */
  params: Readonly<Record<string, string>>;
};

export class CatalogExpansionError extends Error {
  override name = 'CatalogExpansionError';
  constructor(
    readonly entryId: string,
    readonly problems: readonly string[],
  ) {
    super(`Catalog entry ${entryId} cannot be used:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/**
 * Fills an entry's URL templates from the operator's parameters. Refuses
 * unknown parameters, missing ones and values outside their pattern, and runs
 * every resulting URL through the URL policy; throws CatalogExpansionError
 * listing every problem at once.
 */
export function expandEntry(
  entry: CatalogEntry,
  given: Readonly<Record<string, string>>,
  policy: Pick<UrlPolicy, 'allowLoopback'>,
): ExpandedEntry {
  const problems: string[] = [];
  const values: Record<string, string> = {};
  for (const name of Object.keys(given)) {
    if (!Object.hasOwn(entry.params, name))
      problems.push(
        `params.${name}: ${entry.id} has no such parameter (it takes: ${Object.keys(entry.params).join(', ') || 'none'})`,
      );
  }
  for (const [name, param] of Object.entries(entry.params)) {
    const value = Object.hasOwn(given, name) ? given[name] : param.default;
    if (value === undefined) problems.push(`params.${name}: is required (${param.description})`);
    // Values are inserted verbatim: the pattern keeps each inside its URL component, the URL policy below is the second check.
    else if (!anchored(param.pattern).test(value))
      problems.push(`params.${name}: ${JSON.stringify(value.slice(0, 100))} does not match ${param.pattern}`);
    else values[name] = value;
  }
  for (const [name, rule] of Object.entries(entry.derived ?? {})) {
    const hit = rule.cases.find((c) => Object.entries(c.when).every(([key, expected]) => values[key] === expected));
    const filled = fill(hit?.value ?? rule.otherwise, values);
    if (filled !== undefined) values[name] = filled;
  }
  const urls = new Map<string, string>();
  // The client id is the deployment's, filled in by providerConfig.ts; a stand-in is what the policy checks here.
  const withClientId = { ...values, clientId: CLIENT_ID_PLACEHOLDER };
  for (const [field, template] of urlTemplates(entry)) {
    const url = fill(template, withClientId);
    if (url === undefined) continue; // a parameter it needs is already reported above
    try {
      checkUrl(
        url.replace(CLIENT_ID_PLACEHOLDER, 'client-id'),
        { allowLoopback: policy.allowLoopback },
        `${entry.id}.${field}`,
      );
      urls.set(field, url);
    } catch (err) {
      if (!(err instanceof UrlPolicyError)) throw err;
      problems.push(`${field}: ${err.message}`);
    }
  }
  if (problems.length > 0) throw new CatalogExpansionError(entry.id, problems);

  const {
    params: _params,
    derived: _derived,
    issuer,
    revocationEndpoint,
    revocationCall,
    identity,
    metadataCall,
    ...rest
  } = entry;
  const at = (field: string): string => urls.get(field)!;
  return {
    ...rest,
    params: Object.fromEntries(Object.keys(entry.params).map((name) => [name, values[name]!])),
    ...(issuer !== undefined && { issuer: at('issuer') }),
    authorizationEndpoint: at('authorizationEndpoint'),
    tokenEndpoint: at('tokenEndpoint'),
    ...(revocationEndpoint !== undefined && { revocationEndpoint: at('revocationEndpoint') }),
    ...(revocationCall !== undefined && { revocationCall: { ...revocationCall, url: at('revocationCall.url') } }),
    identity: identity.from === 'call' ? { ...identity, url: at('identity.url') } : identity,
    ...(metadataCall !== undefined && { metadataCall: { ...metadataCall, url: at('metadataCall.url') } }),
    apiBase: at('apiBase'),
  };
}

/** The template with every placeholder replaced, or undefined when a value is missing. */
function fill(template: string, values: Readonly<Record<string, string>>): string | undefined {
  if (placeholders(template).some((name) => values[name] === undefined)) return undefined;
  return template.replace(PLACEHOLDER, (_, name: string) => values[name]!);
}
