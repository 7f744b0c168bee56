import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Config } from '../config/config.js';
import { ProviderConfigError } from '../providers/providerConfig.js';
import { providerHosts } from '../providers/providerHosts.js';
import { configuredProviders } from '../providers/providersFile.js';
import { protectedDomainsWith } from '../security/protectedDomains.js';
import { classifyUrl } from '../security/urlClassifier.js';
import { printableUrl } from '../security/urlPolicy.js';
import { deploymentSelf } from './deployment.js';
import { CliError } from './cliError.js';

export class UrlCheckError extends CliError {}

export const urlCheckUsage = `Usage: broker url-check [--json] [--file <path>] [--protect <domain>]… [<url>…]

The broker's judgement of links it did not write (an upstream's URL elicitation, a provider's redirect):
production rules, fragments allowed, lookalikes judged against config/protected-domains.txt, the hosts of
PROVIDERS_FILE's providers and each --protect domain. URLs come from the arguments and --file (one a
line), or from standard input when neither gives any. One line per URL: allow or block, the rule, the
registrable domain to show the user, the URL (credentials left out), and why. Exit 1 when any is blocked.
`;

/** `broker url-check …`: returns the process exit code (0 all allowed, 1 any blocked). */
export async function urlCheck(
  args: string[],
  config: Readonly<Config>,
  out: (line: string) => void,
  readStdin: () => Promise<string>,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      file: { type: 'string' },
      protect: { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    out(urlCheckUsage.trimEnd());
    return 0;
  }
  const fromFile = values.file === undefined ? [] : lines(await readText(values.file));
  let urls = [...positionals, ...fromFile];
  if (urls.length === 0) urls = lines(await readStdin());
  if (urls.length === 0) throw new UrlCheckError(`No URL to check.\n\n${urlCheckUsage}`);

  const protectedDomains = protectedDomainsWith([...(await configuredProviderHosts(config)), ...values.protect]);
  let blocked = 0;
  for (const url of urls) {
    const verdict = classifyUrl(url, { allowLoopback: false, allowFragment: true, protectedDomains });
    const reason = verdict.verdict === 'block' ? verdict.reason : undefined;
    if (verdict.verdict === 'block') blocked++;
    const shown = printableUrl(url);
    if (values.json)
      out(
        JSON.stringify({
          url: shown,
          verdict: verdict.verdict,
          rule: verdict.rule,
          registrableDomain: verdict.registrableDomain,
          reason: reason ?? null,
        }),
      );
    else
      out(
        [
          verdict.verdict.padEnd(5),
          (verdict.rule ?? '-').padEnd(23),
          (verdict.registrableDomain ?? '-').padEnd(24),
          shown,
          reason ? `(${reason})` : '',
        ]
          .join(' ')
          .trimEnd(),
      );
  }
  return blocked > 0 ? 1 : 0;
}

// One URL a line; blank lines and # comments skipped, surrounding space trimmed (a URL has none of its own).
const lines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (cause) {
    throw new UrlCheckError(`--file ${path} cannot be read: ${(cause as Error).message}`);
  }
}

/**
 * The hosts of PROVIDERS_FILE's providers. Only their hosts are read: a
 * client secret the environment lacks is no reason to refuse a judgement.
 */
async function configuredProviderHosts(config: Readonly<Config>): Promise<string[]> {
  if (!config.broker.providersFile) return [];
  try {
    const file = configuredProviders(config);
    const providers = file.parse(await file.entries(), deploymentSelf(config), () => 'unread');
    return providerHosts(providers);
  } catch (err) {
    if (err instanceof ProviderConfigError) throw new UrlCheckError(err.message);
    throw err;
  }
}
