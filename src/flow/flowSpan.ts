import { SpanKind } from '@opentelemetry/api';
import type { NavigationRecord } from './navigationRecord.js';
import { inSpan } from '../telemetry/spans.js';
import { flowParent } from '../telemetry/traceContext.js';

/**
 * Runs a step of a flow's browser leg (the connect page, the consent, the provider's callback) in a
 * span that continues the flow's trace: a child of the span that started it (its stored
 * `traceparent`), begun at `startedAt`, when the request came, before the flow was read. The browser
 * leg is another request, minutes after the MCP call, but one operation: as children, its spans and
 * the provider's (the token exchange) read as one trace with the call that asked for it.
 */
export function inFlowSpan<T>(
  name: string,
  navigation: Pick<NavigationRecord, 'id' | 'provider' | 'lineage' | 'traceParent'>,
  startedAt: number,
  fn: () => Promise<T>,
): Promise<T> {
  const attributes = {
    'broker.navigation.id': navigation.id,
    'broker.provider': navigation.provider,
    'broker.lineage': navigation.lineage,
  };
  return inSpan(
    name,
    attributes,
    fn,
    { kind: SpanKind.SERVER, startTime: startedAt },
    flowParent(navigation.traceParent),
  );
}
