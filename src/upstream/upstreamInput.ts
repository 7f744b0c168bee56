import { z } from 'zod';
import { ForbiddenError } from '../errors/appError.js';
import type { FormAsker, FormGuard } from '../mcp/formGuard.js';
import { MAX_INPUT_KEYS, MAX_UPSTREAM_STATE } from '../mcp/requestState.js';
import { quoteForeign } from '../security/displayText.js';
import type { ProtectedDomains } from '../security/protectedDomains.js';
import { classifyUrl } from '../security/urlClassifier.js';

// What an upstream MCP server asks the user for (MCP 2026-07-28, input_required), judged before a
// host sees any of it: each form passes the form audit (src/mcp/formGuard.ts) as the broker's own
// do, each link the URL classifier (src/security/urlClassifier.ts) with the rules for a link the
// broker did not write; anything else (sampling, roots, a mode the host did not declare) is refused.
// One refusal refuses the whole answer: the upstream gets nothing back and did nothing.

/** One input request as the host is sent it, under the key the upstream gave it. */
export interface RelayedInput {
  key: string;
  mode: 'form' | 'url';
  params: Record<string, unknown>;
}

export interface InputJudge {
  forms: FormGuard;
  asker: FormAsker;
  /** The elicitation modes the host declared on this request. */
  modes: { form: boolean; url: boolean };
  /** Development only: a loopback link (the development upstream's) is allowed. */
  allowLoopback: boolean;
  protectedDomains: ProtectedDomains;
  /** The upstream's name, as the user knows it. */
  displayName: string;
}

const MESSAGE_CHARS = 500;
// Keys are the upstream's: printable ASCII, bounded, echoed back as they came.
const Key = z.string().regex(/^[\x21-\x7e]{1,64}$/);
const Elicitation = z.object({
  method: z.literal('elicitation/create'),
  params: z.union([
    z.looseObject({ mode: z.literal('url'), message: z.string().max(4000), url: z.string().max(4096) }),
    z.looseObject({ mode: z.literal('form').optional(), message: z.string().max(4000), requestedSchema: z.unknown() }),
  ]),
});

/** Refused before the host saw anything: the tool error's text. */
export class InputRefusedError extends ForbiddenError {}

/** The upstream's input requests, each judged; throws InputRefusedError (or the form guard's ForbiddenError). */
export async function judgeInputRequests(
  judge: InputJudge,
  inputRequests: Record<string, unknown>,
  requestState: string | undefined,
): Promise<RelayedInput[]> {
  const from = `${judge.displayName} (${judge.asker.tool})`;
  const refuse = (why: string) =>
    new InputRefusedError(
      `${from} asked for input that was not shown: ${why}. Nothing was asked and nothing was done.`,
    );
  const entries = Object.entries(inputRequests);
  if (entries.length > MAX_INPUT_KEYS) throw refuse(`more than ${MAX_INPUT_KEYS} requests at once`);
  if (requestState !== undefined && requestState.length > MAX_UPSTREAM_STATE)
    throw refuse(`its requestState is longer than ${MAX_UPSTREAM_STATE} characters`);
  const relayed: RelayedInput[] = [];
  for (const [key, raw] of entries) {
    if (!Key.safeParse(key).success) throw refuse('a request key that is not 1-64 printable ASCII characters');
    const request = Elicitation.safeParse(raw);
    if (!request.success) {
      const method = (raw as { method?: unknown } | null)?.method;
      throw refuse(
        typeof method === 'string' && method !== 'elicitation/create'
          ? `the broker relays only elicitations, not ${quoteForeign(method, 40)}`
          : 'an elicitation the broker cannot read',
      );
    }
    const params = request.data.params;
    const message = `${judge.displayName} asks: ${quoteForeign(params.message, MESSAGE_CHARS)}`;
    if (params.mode === 'url') {
      if (!judge.modes.url) throw refuse('a link, and this client did not declare URL elicitation');
      const verdict = classifyUrl(params.url, {
        allowLoopback: judge.allowLoopback,
        allowFragment: true,
        protectedDomains: judge.protectedDomains,
      });
      if (verdict.verdict === 'block') {
        // Neither the link nor its host goes to the host: only which rule refused it.
        judge.asker.logger.warn(
          { requestId: judge.asker.requestId, tool: judge.asker.tool, rule: verdict.rule },
          'upstream link refused by the URL classifier',
        );
        throw refuse(`a link that ${verdict.reason} (rule ${verdict.rule})`);
      }
      relayed.push({
        key,
        mode: 'url',
        params: {
          mode: 'url',
          message: `${message} The link opens ${verdict.registrableDomain}.`,
          url: verdict.url.href,
        },
      });
      continue;
    }
    if (!judge.modes.form) throw refuse('a form, and this client did not declare form elicitation');
    const form = { params: { mode: 'form' as const, message, requestedSchema: params.requestedSchema } };
    await judge.forms.admit(form, judge.asker);
    relayed.push({ key, mode: 'form', params: form.params });
  }
  return relayed;
}
