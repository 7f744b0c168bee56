import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { formatTable } from '../../src/cli/table.js';
import { verdictOf, type GateResult } from '../../src/ledger/gates.js';
import { auditFormSchema } from '../../src/security/formAudit.js';
import { shippedProtectedDomains } from '../../src/security/protectedDomains.js';
import { classifyUrl } from '../../src/security/urlClassifier.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import { readUrlCorpus } from '../support/urlCorpus.js';

// What the suite saw from outside the service, and the gates judged on it rather than on the
// ledger: every HTTP answer it received (MCP, pages, redirects), every page Chromium loaded, every
// form that reached a host, every link the broker handed out; then the URL corpora.

/** A gate judged by the suite: the ledger's shape, so both print in one table. */
export interface SuiteGate extends Omit<GateResult, 'id' | 'noData'> {
  id: string;
  noData?: boolean;
}

export interface Witness {
  /** A fetch that keeps every answer (status, headers, body) it returns. */
  fetch: Fetch;
  /** Keeps every answer of the page's documents and requests. */
  watch(page: Page): void;
  /** A form that reached a host (the schema as the host got it). */
  formShown(requestedSchema: unknown): void;
  /** A link the broker handed to a host (a URL elicitation). */
  linkEmitted(url: string): void;
  /** Everything received so far, once every pending body is read. */
  received(): Promise<string[]>;
  gates(logs: string, tokens: readonly string[]): Promise<SuiteGate[]>;
}

export function createWitness(base: Fetch): Witness {
  const pending: Promise<string>[] = [];
  const forms: unknown[] = [];
  const links: string[] = [];
  const dump = (url: string, status: number, headers: Iterable<[string, string]>, body: string) =>
    `${status} ${url}\n${[...headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${body}`;
  const witness: Witness = {
    async fetch(input, init) {
      const response = await base(input, init);
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      // Read from a copy, so a stream (SSE) is read to its end while its reader reads it too.
      pending.push(
        response
          .clone()
          .text()
          .then(
            (body) => dump(url, response.status, response.headers, body),
            () => dump(url, response.status, response.headers, '(body not read)'),
          ),
      );
      return response;
    },
    watch(page) {
      page.on('response', (response) => {
        pending.push(
          response.body().then(
            (body) => dump(response.url(), response.status(), Object.entries(response.headers()), body.toString()),
            () => dump(response.url(), response.status(), Object.entries(response.headers()), ''),
          ),
        );
      });
    },
    formShown: (schema) => void forms.push(schema),
    linkEmitted: (url) => void links.push(url),
    async received() {
      return Promise.all(pending);
    },
    async gates(logs, tokens) {
      const received = await witness.received();
      const inLogs = tokens.filter((t) => logs.includes(t)).length;
      const inAnswers = received.filter((text) => tokens.some((t) => text.includes(t))).length;
      const sensitive = forms.filter((schema) => !auditFormSchema(schema).admitted).length;
      // The broker's own links, judged as it judges what it emits (loopback is development's).
      const blockedLinks = links.filter(
        (url) =>
          classifyUrl(url, { allowLoopback: true, protectedDomains: shippedProtectedDomains() }).verdict === 'block',
      ).length;
      const corpus = judgeCorpora();
      return [
        {
          id: 'forms_sensitive_admitted',
          gate: 'sensitive form fields admitted (forms that reached a host)',
          figure: `${sensitive} of ${forms.length} forms shown`,
          target: '0',
          pass: sensitive === 0,
        },
        {
          id: 'tokens_in_logs',
          gate: 'third-party tokens in a log line (stdout, stderr)',
          figure: `${inLogs} of ${tokens.length} tokens`,
          target: '0',
          pass: inLogs === 0 && tokens.length > 0,
        },
        {
          id: 'tokens_in_answers',
          gate: 'third-party tokens in a response, page or redirect',
          figure: `${inAnswers} of ${received.length} answers`,
          target: '0',
          pass: inAnswers === 0 && tokens.length > 0,
        },
        {
          id: 'emitted_links_blocked',
          gate: 'connect links the URL classifier blocks',
          figure: `${blockedLinks} of ${links.length}`,
          target: '0',
          pass: blockedLinks === 0 && links.length > 0,
        },
        {
          id: 'url_corpus_malicious',
          gate: 'malicious URL corpus blocked',
          figure: `${pct(corpus.malicious.blocked, corpus.malicious.total)} (${corpus.malicious.blocked}/${corpus.malicious.total})`,
          target: '100%',
          pass: corpus.malicious.blocked === corpus.malicious.total,
        },
        {
          id: 'url_corpus_benign',
          gate: 'benign URL corpus refused',
          figure: `${pct(corpus.benign.blocked, corpus.benign.total)} (${corpus.benign.blocked}/${corpus.benign.total})`,
          target: '< 0.1%',
          pass: corpus.benign.blocked / corpus.benign.total < 0.001,
        },
      ];
    },
  };
  return witness;
}

const pct = (part: number, whole: number) => `${((100 * part) / whole).toFixed(2)}%`;

// As test/security/urlCorpus.test.ts judges them: links from a third party (an upstream's URL
// elicitation), production rules, fragments allowed, the shipped protected domains.
function judgeCorpora() {
  const options = { allowLoopback: false, allowFragment: true, protectedDomains: shippedProtectedDomains() };
  const judge = (name: 'malicious.txt' | 'benign.txt') => {
    const entries = readUrlCorpus(name);
    return {
      total: entries.length,
      blocked: entries.filter((e) => classifyUrl(e.url, options).verdict === 'block').length,
    };
  };
  return { malicious: judge('malicious.txt'), benign: judge('benign.txt') };
}

/**
 * The Report Service's tokens, read from its own store in the data folder (the development
 * provider saves refresh tokens, and opaque access tokens, by their value): the canaries that
 * must never be found outside the vault.
 */
export async function reportServiceTokens(dataDir: string): Promise<string[]> {
  const text = await readFile(join(dataDir, 'report-service-provider.json'), 'utf8');
  const { entries } = JSON.parse(text) as { entries: { model: string; id: string }[] };
  return entries.filter((e) => e.model === 'RefreshToken' || e.model === 'AccessToken').map((e) => e.id);
}

/** One table of every gate: the ledger's and the suite's. */
export function gateTable(gates: readonly SuiteGate[]): string {
  return formatTable(
    ['gate', 'figure', 'target', 'result'],
    gates.map((g) => [g.gate, g.figure, g.target, verdictOf({ noData: false, ...g })]),
  );
}
