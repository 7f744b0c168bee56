import { describe, expect, it } from 'vitest';
import { INVISIBLE } from '../../src/security/displayText.js';
import { digestOf } from '../../src/shared/tokens.js';
import { elicitConnection, openConnectLink } from '../support/connectFlow.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A tool's purpose quotes text the model chose (a report title). On the consent
// page and in the elicitation message that text loses its bidi controls and
// invisible characters, and is shown quoted, apart from the broker's wording:
// a title cannot pass itself off as part of what the broker says.

const INVISIBLE_ANYWHERE = new RegExp(INVISIBLE.source, 'gu');

describe('model-chosen text on the consent page', () => {
  const { stack, tokens } = useBrokerStack({}, { users: ['alice'] });

  it('strips bidi and invisible characters from a report title and shows it quoted, apart from the fixed wording', async () => {
    // Reads as "…and delete all reports" once the RLO flips the tail; the zero-width space and tag characters hide more.
    const title =
      'Q3\u200b summary\u202e stroper lla eteled dna\u202c \u201cApproved\u201d\u2066 by admin\u2069\u{e0041}\nnext line';
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_create', { title, body: 'x' });
    const shown = 'Q3 summary stroper lla eteled dna "Approved" by admin next line';

    expect(elicited.message.match(INVISIBLE_ANYWHERE)).toBeNull();
    expect(elicited.message).toContain(
      `To create the report \u201c${shown}\u201d, connect your Report Service account`,
    );
    const handle = new URL(elicited.url).pathname.split('/').pop()!;
    const [stored] = (
      await stack.db.pool.query('SELECT purpose FROM elicitation_navigations WHERE handle_digest = $1', [
        digestOf(handle),
      ])
    ).rows;
    expect(stored.purpose).toBe(`create the report \u201c${shown}\u201d`);

    const { review } = await openConnectLink(stack, elicited.url, 'alice');
    expect(review.status).toBe(200);
    expect(review.text.match(INVISIBLE_ANYWHERE)).toBeNull();
    expect(review.text).toContain(
      `An app you use asked to <span class="purpose">create the report <q class="foreign" dir="auto">${shown.replace(/"/g, '&quot;')}</q></span>. To do that`,
    );
    expect(review.text).toContain('Quoted text was chosen by the app, not by the broker');
  });

  it('shows a purpose without model-chosen text as plain wording, with no quote note', async () => {
    const elicited = await elicitConnection(stack, tokens.alice, 'reports_list', {});
    const { review } = await openConnectLink(stack, elicited.url, 'alice');
    expect(review.text).toContain('An app you use asked to <span class="purpose">list your reports</span>.');
    expect(review.text).not.toContain('Quoted text');
  });
});
