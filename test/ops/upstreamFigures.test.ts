import { describe, expect, it } from 'vitest';
import { upstreamRows } from '../../src/ops/upstreamFigures.js';

describe('upstreamRows', () => {
  const memo = { id: 'memo', prefix: 'memo', url: 'https://memo.test/mcp' };
  const linear = { id: 'linear', prefix: 'linear', url: 'https://mcp.linear.test/mcp' };

  it("counts each upstream's own calls, errors by outcome and lists, and zeros for one nothing was counted for", () => {
    const rows = upstreamRows(
      [memo, linear],
      new Map([['memo', { users: 2, connections: 3, needsReauth: 1 }]]),
      new Map([['memo', { succeeded: 4, failed: 1, unknown: 1, pending: 0 }]]),
      [
        { upstream: 'memo', method: 'tools/call', outcome: 'ok', count: 7 },
        { upstream: 'memo', method: 'tools/call', outcome: 'unreachable', count: 2 },
        { upstream: 'memo', method: 'tools/call', outcome: 'unknown', count: 1 },
        { upstream: 'memo', method: 'tools/call', outcome: 'tool_error', count: 0 },
        { upstream: 'memo', method: 'tools/list', outcome: 'ok', count: 5 },
        { upstream: 'memo', method: 'tools/list', outcome: 'unauthorized', count: 1 },
        { upstream: 'other', method: 'tools/call', outcome: 'ok', count: 9 },
      ],
    );
    expect(rows[0]).toEqual({
      ...memo,
      connections: { users: 2, connections: 3, needsReauth: 1 },
      accepted: { succeeded: 4, failed: 1, unknown: 1, pending: 0 },
      instance: { calls: 10, errors: 3, errorsByOutcome: 'unreachable 2, outcome unknown 1', lists: 6 },
    });
    expect(rows[1]).toEqual({
      ...linear,
      connections: { users: 0, connections: 0, needsReauth: 0 },
      accepted: { succeeded: 0, failed: 0, unknown: 0, pending: 0 },
      instance: { calls: 0, errors: 0, errorsByOutcome: '', lists: 0 },
    });
  });
});
