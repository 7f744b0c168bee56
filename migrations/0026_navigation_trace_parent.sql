-- The trace context of the span that started a flow (W3C Trace Context `traceparent`), so that its
-- browser leg, another request minutes later, continues the MCP call's trace
-- (src/telemetry/traceContext.ts). NULL with tracing off. Read through a parser that ignores a
-- malformed value, so no CHECK: adding the column touches no row.
ALTER TABLE elicitation_navigations ADD COLUMN trace_parent text;
