import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineFormTool } from '../../src/mcp/defineFormTool.js';
import { completeResult } from '../../src/mcp/defineTool.js';
import type { ElicitFormRequest } from '../../src/mcp/protocol.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/shared/logger.js';
import { closeLegacy, connectLegacy } from '../support/legacySdkClient.js';
import { callTool } from '../support/mcpWire.js';
import { sampleValue } from '../support/metricsText.js';
import { useBrokerStack } from '../support/useBrokerStack.js';

// A form tool whose form would collect a secret, served beside the built-in tools: on both wires the
// call ends in a tool error naming the field, no form ever reaches the host, and each refusal is
// counted on /metrics and logged without the schema's values.

const CANARY = `canary-${randomBytes(6).toString('hex')}`;
const TOKEN = randomBytes(32).toString('base64url');
let performed = 0;

const secretForm = (): ElicitFormRequest => ({
  method: 'elicitation/create',
  params: {
    mode: 'form',
    message: 'Finish setting up your integration',
    requestedSchema: {
      type: 'object',
      properties: {
        workspace: { type: 'string', title: 'Workspace name' },
        api_key: { type: 'string', title: 'API key', description: 'From your dashboard', default: CANARY },
      },
      required: ['workspace', 'api_key'],
    },
  },
});

const integrationSetup = defineFormTool({
  name: 'integration_setup',
  title: 'Set up an integration (asks the user)',
  description: 'Asks the user for the details of an integration in a form.',
  inputSchema: z.strictObject({ name: z.string().max(64) }),
  inputKey: 'setup',
  phase: 'integration_setup',
  digest: (args) => args.name,
  ask: () => Promise.resolve({ form: secretForm(), offered: [] }),
  askAgain: () => Promise.resolve(secretForm()),
  answer: () => {
    performed += 1;
    return Promise.resolve(completeResult('Set up.', { status: 'done' }));
  },
});

describe('a form the audit refuses, on the wire', () => {
  const { stack, tokens } = useBrokerStack(
    {
      extraTools: [integrationSetup],
      metrics: (pool) => createMetrics({ pool, logger: createLogger({ level: 'silent' }), gateCacheMs: 0 }),
      metricsToken: TOKEN,
    },
    { users: ['alice'] },
  );
  const refusals = async () => {
    const response = await stack.fetch(`${stack.brokerUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    return sampleValue(await response.text(), 'broker_form_refusals_total', { rule: 'secret_term', origin: 'broker' });
  };
  const refusedLines = () => stack.logs.filter((line) => line.includes('form elicitation refused by the audit'));

  it('2026-07-28: answers an isError result, never input_required, and counts the refusal', async () => {
    const { json } = await callTool(stack, tokens.alice, 'integration_setup', { name: 'crm' });
    expect(json.error).toBeUndefined();
    const result = json.result as Record<string, unknown>;
    expect(result).toMatchObject({ resultType: 'complete', isError: true, structuredContent: { error: 'forbidden' } });
    expect(result['inputRequests']).toBeUndefined();
    expect(result['requestState']).toBeUndefined();
    const text = (result['content'] as { text: string }[])[0]!.text;
    expect(text).toContain("integration_setup's form was not shown: field “api_key” asks for an API key (its name)");
    expect(JSON.stringify(json)).not.toContain(CANARY);
    expect(await refusals()).toBe(1);
    expect(refusedLines()).toHaveLength(1);
    expect(JSON.parse(refusedLines()[0]!)).toMatchObject({ tool: 'integration_setup', origin: 'broker' });
  });

  it('2025-11-25: sends no elicitation/create on the stream and ends the call in the same error', async () => {
    const legacy = await connectLegacy(stack, tokens.alice, { form: () => ({ action: 'accept', content: {} }) });
    try {
      const result = await legacy.client.callTool({ name: 'integration_setup', arguments: { name: 'crm' } });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ error: 'forbidden' });
      expect(JSON.stringify(result.content)).toContain('field “api_key” asks for an API key');
      expect(legacy.formAsks).toEqual([]);
    } finally {
      await closeLegacy(legacy);
    }
    expect(await refusals()).toBe(2);
    expect(performed).toBe(0);
    expect(stack.logs.join('\n')).not.toContain(CANARY);
  });

  it("still asks the broker's own forms (notes_delete)", async () => {
    const { json } = await callTool(stack, tokens.alice, 'notes_delete', {
      workspaceUri: 'file:///work/notes/alice',
      title: 'TPS report (Q2)',
    });
    expect(json.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { delete_choice: { params: { mode: 'form' } } },
    });
    expect(await refusals()).toBe(2);
  });
});
