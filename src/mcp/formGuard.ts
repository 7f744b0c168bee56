import type { Queryable } from '../db/pool.js';
import { ForbiddenError } from '../errors/appError.js';
import { appendObservations } from '../ledger/ledgerRepo.js';
import {
  auditFormSchema,
  describeFinding,
  type FormAuditFinding,
  type FormAuditRule,
  type FormOrigin,
} from '../security/formAudit.js';
import { plainText, quoteForeign } from '../security/displayText.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';

// Where the form audit (src/security/formAudit.ts) meets the wire: every form
// elicitation, the broker's own or relayed, passes admit() before it is sent. A
// refused form is never sent: the caller gets a ForbiddenError, which a tool
// call answers as an isError result naming what was wrong; the refusal is
// counted, and recorded on its flow when it belongs to one (else logged).

export interface FormGuardDeps {
  pool: Queryable;
  clock: Clock;
  /** Counts one refused form, by its first finding's rule (metrics). */
  refused(rule: FormAuditRule, origin: FormOrigin): void;
}

/** Who is asking, for the record of a refusal. */
export interface FormAsker {
  tool: string;
  origin: FormOrigin;
  /** 'mcp:<sub>' of the principal the form would be shown to. */
  actor: string;
  requestId: string;
  logger: Logger;
  /** The flow the form belongs to, when there is one: the refusal goes in its ledger. */
  navigationId?: string;
}

export interface FormGuard {
  /**
   * Resolves when the form may be sent; throws ForbiddenError (and records why) when not. The schema
   * is taken as it came (a relayed one is unchecked JSON): the audit is what checks it.
   */
  admit(form: { params: { requestedSchema: unknown; message?: unknown } }, asker: FormAsker): Promise<void>;
}

// Names in the record and the message are someone else's text, bounded and made plain.
const NAME_CHARS = 64;
const FINDINGS_SHOWN = 5;

export function createFormGuard(deps: FormGuardDeps): FormGuard {
  return {
    async admit(form, asker) {
      // A relayed form's message is audited too; the broker's own quote the user's own data (a note's title).
      const message = asker.origin === 'upstream' ? form.params.message : undefined;
      const audit = auditFormSchema(form.params.requestedSchema, message);
      if (audit.admitted) return;
      const { findings } = audit;
      deps.refused(findings[0]!.rule, asker.origin);
      const evidence = { tool: asker.tool, origin: asker.origin, findings: findings.map(recordOf) };
      if (asker.navigationId !== undefined)
        await appendObservations(deps.pool, [
          {
            navigationId: asker.navigationId,
            event: 'form_refused',
            actor: asker.actor,
            evidence,
            at: deps.clock.now(),
          },
        ]);
      else asker.logger.warn({ requestId: asker.requestId, ...evidence }, 'form elicitation refused by the audit');
      throw new ForbiddenError(refusalText(asker, findings));
    },
  };
}

/** What the ledger and the log keep of a finding: rule, field name and keyword, where and what; never a value. */
function recordOf(f: FormAuditFinding): Record<string, string> {
  const record: Record<string, string> = { rule: f.rule };
  if (f.field !== undefined) record['field'] = bounded(f.field);
  if (f.keyword !== undefined) record['keyword'] = bounded(f.keyword);
  if (f.part !== undefined) record['part'] = f.part;
  if (f.concept !== undefined) record['concept'] = f.concept;
  return record;
}

function bounded(name: string): string {
  return [...plainText(name)].slice(0, NAME_CHARS).join('');
}

function refusalText(asker: FormAsker, findings: readonly FormAuditFinding[]): string {
  const who = asker.origin === 'broker' ? `${asker.tool}'s form` : `The form from ${asker.tool}'s upstream server`;
  const shown = findings.slice(0, FINDINGS_SHOWN).map((f) => describeFinding(f, (n) => quoteForeign(n, NAME_CHARS)));
  const more = findings.length > FINDINGS_SHOWN ? `; and ${findings.length - FINDINGS_SHOWN} more` : '';
  return (
    `${who} was not shown: ${shown.join('; ')}${more}. A form may not collect passwords, keys, tokens or ` +
    'payment or identity numbers (those go through a link the user opens), and may only use flat text, ' +
    'number, boolean and choice fields. Nothing was asked and nothing was done.'
  );
}
