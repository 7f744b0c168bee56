import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import type { BusinessOutcome } from '../broker/acceptOriginalOperation.js';
import { UpstreamUnauthorizedError } from '../broker/forgetConnection.js';
import type { ConnectionCall } from '../mcp/calls/connectionCall.js';
import { runAccepted } from '../mcp/calls/acceptedCall.js';
import { runConnectionTool } from '../mcp/connectionTool.js';
import type { ConnectionTool } from '../mcp/defineConnectionTool.js';
import { defineTool, errorResult, parseArguments } from '../mcp/defineTool.js';
import type { ToolCallResult } from '../mcp/protocol.js';
import { argumentsDigest, RequestStateError, type SealedState, type StateBinding } from '../mcp/requestState.js';
import type { DirectPerform } from '../mcp/calls/connectionCall.js';
import type { ToolContext } from '../mcp/defineTool.js';
import { ElicitResultSchema } from '../mcp/elicitationForms.js';
import { elicitationModes } from '../mcp/protocol.js';
import { invalidParams } from '../mcp/toMcp.js';
import { ForbiddenError, InvalidInputError } from '../errors/appError.js';
import { shippedProtectedDomains, type ProtectedDomains } from '../security/protectedDomains.js';
import { judgeInputRequests, type RelayedInput } from './upstreamInput.js';
import type { McpToolDeps } from '../mcp/toolDeps.js';
import type { DynamicTools, ListHints, ToolListing } from '../mcp/toolRegistry.js';
import { combineHints } from '../mcp/toolRegistry.js';
import type { Provider } from '../providers/providerConfig.js';
import type { Pool } from '../db/pool.js';
import type { UpstreamOutcome } from '../metrics/metrics.js';
import { InputRequiredError, operationKey, OutcomeUnknownError } from '../broker/acceptOriginalOperation.js';
import { findReceiptById } from '../broker/receiptRepo.js';
import { UpstreamUnreachableError } from './upstreamMcpClient.js';
import type { Logger } from '../shared/logger.js';
import { findSnapshot } from './snapshotsRepo.js';
import { accessTokenFor, type TokenVaultDeps } from '../secrets/tokenVault.js';
import { CANNOT_ASK } from './upstreamMcpClient.js';
import type {
  UpstreamAskAnswer,
  UpstreamCallAnswer,
  UpstreamMcp,
  UpstreamTool,
  UpstreamToolList,
} from './upstreamMcpClient.js';
import type { InputJudge } from './upstreamInput.js';

type UpstreamInputAnswer = Extract<UpstreamCallAnswer, { kind: 'input_required' }>;

export interface UpstreamToolsDeps {
  /** The upstream MCP providers (kind mcp), as configured. */
  upstreams: readonly Provider[];
  mcp: UpstreamMcp;
  vault: TokenVaultDeps;
  /** Where operators' pinned snapshots are (upstream_tool_snapshots). */
  pool: Pool;
  logger: Logger;
  /** Counts each request to an upstream (the instance's metrics). */
  observe?: (upstream: string, method: 'tools/call' | 'tools/list', outcome: UpstreamOutcome) => void;
  /** How long a user's list is kept when the upstream gives no ttlMs (and the most it is kept). */
  listTtlMs?: number;
  /** The domains a relayed link's lookalikes are judged against (the shipped list and the configured providers'). */
  protectedDomains?: ProtectedDomains;
}

/** The phase a relayed upstream input_required's requestState is sealed for. */
export const UPSTREAM_INPUT_PHASE = 'upstream_input';
// A 2025-11-25 host is asked on the call's stream: at most this many rounds of questions for one call.
const MAX_NESTED_ROUNDS = 5;

/** The host's retry of a relayed input_required: what goes back to the upstream. */
interface Resume {
  inputResponses: Record<string, unknown>;
  requestState: string | undefined;
  /** The accepted operation the question was asked for: the answer resumes it, through its receipt. */
  receiptId?: string | undefined;
}

// MCP 2026-07-28 tool names are 1-128 of [A-Za-z0-9_.-]; the broker's are at most 64 of [a-z0-9_-].
const TOOL_NAME = /^[a-z0-9_-]{1,64}$/;
const DEFAULT_LIST_TTL_MS = 60_000;
const MAX_LIST_TTL_MS = 10 * 60_000;
const MAX_CACHED_LISTS = 10_000;
const MAX_FOUND = 1_000;
// What a host may keep a list holding a pinned snapshot for: an operator's change shows within it.
const SNAPSHOT_TTL_MS = 30_000;
const ArgumentsSchema = z.looseObject({});

/** `<prefix>_<tool>` for an upstream tool: lower case, other characters as `_`; undefined when longer than 64. */
export function servedName(prefix: string, upstreamName: string): string | undefined {
  const name = `${prefix}_${upstreamName.toLowerCase().replace(/[^a-z0-9_-]/g, '_')}`;
  return TOOL_NAME.test(name) ? name : undefined;
}

/**
 * The names a start-up refuses: an upstream whose prefix is the first word of one of the broker's
 * own tools (`notes` beside `notes_delete`). Prefixes have no `_`, and each is one upstream's, so
 * upstreams' names cannot meet each other.
 */
export function prefixCollisions(ownNames: readonly string[], upstreams: readonly Provider[]): string[] {
  return upstreams.flatMap((p) => {
    const prefix = p.upstream!.prefix;
    const taken = ownNames.filter((n) => n.split('_')[0] === prefix);
    return taken.length === 0
      ? []
      : [
          `${p.id}: prefix ${prefix} would serve names beside the broker's own ${taken.join(', ')}: choose another prefix`,
        ];
  });
}

/** A served tool: its tools/list entry and the upstream tool it calls. */
interface Served {
  descriptor: Record<string, unknown>;
  upstream: UpstreamTool;
}

interface CachedList {
  served: Map<string, Served>;
  hints: ListHints;
  expiresAt: number;
}

/**
 * The upstream MCP servers' tools on /mcp, the registry's dynamic part: each upstream's list for the
 * user, fetched with their upstream token and kept for its ttlMs (keyed by that token's digest, so a
 * list is only ever served to whoever's token fetched it), and each call a connection call: a user
 * without a connection gets the connect flow, and an accepted call is sent once through its receipt.
 */
export function createUpstreamTools(deps: UpstreamToolsDeps): DynamicTools<McpToolDeps> {
  const byPrefix = new Map(deps.upstreams.map((p) => [p.upstream!.prefix, p]));
  const ordered = [...deps.upstreams].sort((a, b) => (a.upstream!.prefix < b.upstream!.prefix ? -1 : 1));
  const maxTtl = deps.listTtlMs ?? MAX_LIST_TTL_MS;
  const lists = new Map<string, CachedList>();
  // Lists an upstream answered with cacheScope public: the same for every user, so served to those not connected.
  const publicLists = new Map<string, CachedList>();
  /** For a user not connected to `provider`: its public list while fresh, else the operator's snapshot (read each time: pinning shows at once). */
  async function unconnectedPart(provider: Provider): Promise<ToolListing | undefined> {
    const open = publicLists.get(provider.id);
    const part =
      open && open.expiresAt > Date.now()
        ? open
        : await findSnapshot(deps.pool, provider.id).then(
            (row) => row && toServed(provider, { tools: row.tools, ttlMs: SNAPSHOT_TTL_MS, cacheScope: 'public' }),
          );
    return part && { tools: [...part.served.values()].map((s) => s.descriptor), ...part.hints, cacheScope: 'public' };
  }

  const cacheKey = (provider: Provider, token: string) =>
    `${provider.id}\n${createHash('sha256').update(token).digest('base64url')}`;

  function toServed(provider: Provider, listed: UpstreamToolList): CachedList {
    const served = new Map<string, Served>();
    const clashes = new Set<string>();
    for (const tool of listed.tools) {
      const name = servedName(provider.upstream!.prefix, tool.name);
      if (!name) {
        deps.logger.warn(
          { upstream: provider.id, tool: tool.name.slice(0, 128) },
          'upstream tool name too long; not served',
        );
        continue;
      }
      if (served.has(name)) clashes.add(name);
      served.set(name, {
        upstream: tool,
        descriptor: {
          name,
          ...(tool.title !== undefined && { title: tool.title }),
          ...(tool.description !== undefined && { description: tool.description }),
          inputSchema: tool.inputSchema,
          ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
          ...(tool.annotations !== undefined && { annotations: tool.annotations }),
        },
      });
    }
    // Two upstream names that read the same here (`Search`, `search`): neither is served, rather than one at random.
    for (const name of clashes) {
      served.delete(name);
      deps.logger.warn(
        { upstream: provider.id, tool: name },
        'two upstream tools have the same served name; neither is served',
      );
    }
    // In name order, whatever the upstream's: the list is the same for the same tools.
    const sorted = new Map([...served].sort(([a], [b]) => (a < b ? -1 : 1)));
    const ttlMs = Math.min(listed.ttlMs ?? DEFAULT_LIST_TTL_MS, maxTtl);
    const hints: ListHints = { ttlMs, cacheScope: listed.cacheScope === 'public' ? 'public' : 'private' };
    return { served: sorted, hints, expiresAt: Date.now() + ttlMs };
  }

  /** The user's list at `provider`, from the cache while it is fresh. */
  async function listFor(provider: Provider, token: string): Promise<CachedList> {
    const key = cacheKey(provider, token);
    const cached = lists.get(key);
    if (cached && cached.expiresAt > Date.now()) return cached;
    const fresh = toServed(
      provider,
      await counted(provider, 'tools/list', () => deps.mcp.listTools(provider.upstream!.url, token)),
    );
    lists.delete(key);
    lists.set(key, fresh);
    if (fresh.hints.cacheScope === 'public') publicLists.set(provider.id, fresh);
    // Oldest first out: a Map iterates in insertion order.
    while (lists.size > MAX_CACHED_LISTS) lists.delete(lists.keys().next().value!);
    return fresh;
  }

  async function listOne(principal: Principal, provider: Provider): Promise<ToolListing | undefined> {
    const token = await accessTokenFor(deps.vault, principal, provider.id);
    if (!token) return unconnectedPart(provider);
    try {
      const { served, hints } = await listFor(provider, token);
      return { tools: [...served.values()].map((s) => s.descriptor), ...hints, cacheScope: 'private' };
    } catch (err) {
      // A refused token is forgotten by the next call of one of its tools, which then asks to connect again.
      if (!(err instanceof UpstreamUnauthorizedError))
        deps.logger.warn({ err, upstream: provider.id }, 'upstream tools not listed');
      return unconnectedPart(provider);
    }
  }

  /** Runs one request to `provider`, counting how it ended. */
  async function counted<T extends object>(
    provider: Provider,
    method: 'tools/call' | 'tools/list',
    run: () => Promise<T>,
  ): Promise<T> {
    try {
      const answer = await run();
      const outcome: UpstreamOutcome =
        'kind' in answer && answer.kind === 'error'
          ? 'upstream_error'
          : 'result' in answer && (answer.result as Record<string, unknown> | undefined)?.['isError'] === true
            ? 'tool_error'
            : 'ok';
      deps.observe?.(provider.id, method, outcome);
      return answer;
    } catch (err) {
      deps.observe?.(
        provider.id,
        method,
        err instanceof UpstreamUnauthorizedError
          ? 'unauthorized'
          : err instanceof OutcomeUnknownError
            ? 'unknown'
            : err instanceof UpstreamUnreachableError
              ? 'unreachable'
              : 'unknown',
      );
      throw err;
    }
  }

  function connectionCall(
    provider: Provider,
    name: string,
    args: Record<string, unknown>,
    toolDeps: McpToolDeps,
    resume?: Resume,
  ): ConnectionCall {
    const displayName = provider.displayName;
    const requestDigest = argumentsDigest([name, canonicalJson(args)]);
    const relay = (direct: DirectPerform, answer: UpstreamInputAnswer) =>
      relayInput(toolDeps, direct, { provider, name, requestDigest }, answer);
    return {
      tool: name,
      provider: provider.id,
      // The upstream decides what its token may do; any connection to it will do.
      scopes: [],
      purpose: `use ${name} on ${displayName}`,
      requestDigest,
      arguments: args,
      // MCP has no idempotency key: an unknown outcome waits for an operator.
      replayable: false,
      async perform({ token }, _key, direct): Promise<BusinessOutcome> {
        const served = (await listFor(provider, token)).served.get(name);
        if (!served)
          return {
            status: 'failed',
            outcome: { error: 'unknown_tool', message: `${displayName} has no tool ${name} for you.` },
          };
        // Only while the host's request is here may the upstream ask (a sweep's or a callback's perform
        // has none), and it is offered no more than the host declared.
        const elicitation = direct ? elicitationModes(direct.ctx.capabilities) : undefined;
        // A 2025-11-25 upstream's own questions on the call's stream: asked of this host when it can be, and why not when not.
        const notes: string[] = [];
        const ask = (params: Record<string, unknown>) =>
          askForUpstream(toolDeps, direct, { provider, name }, params, notes);
        let round: Resume | undefined = resume;
        let answer: UpstreamCallAnswer;
        for (let rounds = 0; ; rounds++) {
          answer = await counted(provider, 'tools/call', () =>
            deps.mcp.callTool(provider.upstream!.url, token, served.upstream.name, args, served.upstream, {
              ...(elicitation && { elicitation }),
              ask,
              ...(round && { inputResponses: round.inputResponses }),
              ...(round?.requestState !== undefined && { requestState: round.requestState }),
            }),
          );
          if (answer.kind !== 'input_required' || !direct) break;
          const relayed = await relay(direct, answer);
          // An accepted operation's question is no outcome: its receipt stays pending for the host's answer.
          if (relayed.kind === 'relayed') throw new InputRequiredError(relayed.result, relayed.until);
          if (relayed.kind !== 'asked') return relayed.outcome;
          if (rounds + 1 >= MAX_NESTED_ROUNDS)
            return failed(
              `${displayName} asked for input more than ${MAX_NESTED_ROUNDS} times for ${name}; nothing more was sent.`,
            );
          round = relayed.resume;
        }
        if (answer.kind === 'input_required')
          return {
            status: 'failed',
            outcome: {
              error: 'input_required',
              message: `${displayName} asked for more input before doing ${name} (${Object.keys(answer.inputRequests).length} request(s)) while the operation was performed without you (after you connected, with your request gone), when nobody can be asked: nothing was done. Call the tool again as a new call; its questions are then relayed to you.`,
            },
          };
        if (answer.kind === 'error')
          return {
            status: 'failed',
            outcome: {
              error: 'upstream_error',
              code: answer.code,
              message: [`${displayName} answered ${name} with an error: ${answer.message}`, ...notes].join(' '),
            },
          };
        return {
          status: answer.result['isError'] === true ? 'failed' : 'succeeded',
          outcome: { result: answer.result, ...(notes.length > 0 && { notes }) },
        };
      },
      render: ({ outcome }) => renderOutcome(outcome),
    };
  }

  /**
   * The host's side of one relayed input_required: on 2026-07-28, the broker's own input_required with
   * the upstream's requestState sealed in the broker's; on 2025-11-25, each request asked on the
   * call's stream and the answers collected for the upstream. Judged first (upstreamInput.ts).
   */
  async function relayInput(
    toolDeps: McpToolDeps,
    direct: DirectPerform,
    call: { provider: Provider; name: string; requestDigest: string },
    answer: UpstreamInputAnswer,
  ): Promise<
    | { kind: 'done'; outcome: BusinessOutcome }
    | { kind: 'asked'; resume: Resume }
    | { kind: 'relayed'; result: ToolCallResult; until: Date }
  > {
    const { ctx } = direct;
    let judged: RelayedInput[];
    try {
      judged = await judgeInputRequests(judgeFor(toolDeps, ctx, call), answer.inputRequests, answer.requestState);
    } catch (err) {
      if (!(err instanceof ForbiddenError)) throw err;
      return { kind: 'done', outcome: { status: 'failed', outcome: { error: 'input_refused', message: err.message } } };
    }
    if (direct.ask) {
      const inputResponses: Record<string, unknown> = {};
      for (const input of judged) {
        const params = input.mode === 'url' ? { ...input.params, elicitationId: randomUUID() } : input.params;
        const reply = ElicitResultSchema.safeParse((await direct.ask('elicitation/create', params))?.['result']);
        if (!reply.success)
          return {
            kind: 'done',
            outcome: failed(
              `${call.provider.displayName}'s question for ${call.name} was not answered; nothing was done.`,
            ),
          };
        inputResponses[input.key] = reply.data;
      }
      return { kind: 'asked', resume: { inputResponses, requestState: answer.requestState } };
    }
    const { token, state } = await toolDeps.connection.requestState.seal(
      relayBinding(ctx, call.name, call.requestDigest),
      {
        ...(answer.requestState !== undefined && { upstreamState: answer.requestState }),
        inputKeys: judged.map((i) => i.key),
        ...(direct.receiptId !== undefined && { receiptId: direct.receiptId }),
      },
    );
    const relayed: ToolCallResult = {
      resultType: 'input_required',
      ...(judged.length > 0 && {
        inputRequests: Object.fromEntries(
          judged.map((i) => [i.key, { method: 'elicitation/create', params: i.params }]),
        ),
      }),
      requestState: token,
    } as ToolCallResult;
    if (direct.receiptId !== undefined) return { kind: 'relayed', result: relayed, until: state.expiresAt };
    return { kind: 'done', outcome: { status: 'failed', outcome: { error: 'input_required', relayed } } };
  }

  /** How an upstream's questions on a call of `ctx`'s are judged (upstreamInput.ts). */
  function judgeFor(toolDeps: McpToolDeps, ctx: ToolContext, call: { provider: Provider; name: string }): InputJudge {
    return {
      forms: toolDeps.forms,
      asker: {
        tool: call.name,
        origin: 'upstream',
        actor: `mcp:${ctx.principal.sub}`,
        requestId: ctx.requestId,
        logger: deps.logger,
      },
      modes: elicitationModes(ctx.capabilities),
      allowLoopback: toolDeps.connection.broker.allowLoopback,
      protectedDomains: deps.protectedDomains ?? shippedProtectedDomains(),
      displayName: call.provider.displayName,
    };
  }

  /**
   * A 2025-11-25 upstream's elicitation/create during a call (a server-to-client request on the
   * call's stream), judged as an input_required's are. Asked of a 2025-11-25 host that declared its
   * mode, nested on the call's stream, and its answer returned. Otherwise the upstream gets a JSON-RPC
   * error, never a `decline` (an answer the user did not give), and decides what to do; the host is
   * told why in the result (`notes`): CANNOT_ASK when nobody can be asked (a re-drive, with no host request, a
   * 2026-07-28 host, which has no server-to-client channel and whose retry may reach another
   * instance, a mode the host did not declare, no answer), -32602 when the question was refused (a
   * form the form audit refuses, a link the URL classifier blocks): the host never sees it.
   */
  async function askForUpstream(
    toolDeps: McpToolDeps,
    direct: DirectPerform | undefined,
    call: { provider: Provider; name: string },
    params: Record<string, unknown>,
    notes: string[],
  ): Promise<UpstreamAskAnswer> {
    const from = `${call.provider.displayName} asked a question during ${call.name}`;
    const cannot = (why: string): UpstreamAskAnswer => {
      notes.push(`${from} that was not shown: ${why}; it was told the broker cannot ask the user.`);
      return { kind: 'error', code: CANNOT_ASK, message: `The broker cannot ask the user on this call: ${why}.` };
    };
    if (!direct) return cannot('the call was performed without your request (a re-drive), when nobody can be asked');
    if (!direct.ask) return cannot('this client speaks MCP 2026-07-28, where a server cannot ask during a call');
    const mode = params['mode'] === 'url' ? 'url' : 'form';
    if (!elicitationModes(direct.ctx.capabilities)[mode])
      return cannot(`this client did not declare ${mode} elicitation`);
    let judged: RelayedInput[];
    try {
      judged = await judgeInputRequests(
        judgeFor(toolDeps, direct.ctx, call),
        { question: { method: 'elicitation/create', params } },
        undefined,
      );
    } catch (err) {
      if (!(err instanceof ForbiddenError)) throw err;
      notes.push(err.message);
      return { kind: 'error', code: -32602, message: 'The broker refused to show this request to the user.' };
    }
    const [input] = judged;
    const shown = input!.mode === 'url' ? { ...input!.params, elicitationId: randomUUID() } : input!.params;
    const reply = ElicitResultSchema.safeParse((await direct.ask('elicitation/create', shown))?.['result']);
    if (!reply.success) return cannot('the user gave no answer');
    return { kind: 'answer', result: reply.data };
  }

  /** The host's retry of a relayed input_required (its requestState sealed for UPSTREAM_INPUT_PHASE), else undefined. */
  async function resumeOf(
    toolDeps: McpToolDeps,
    ctx: ToolContext,
    name: string,
    digest: string,
  ): Promise<Resume | undefined> {
    if (ctx.requestState === undefined) return undefined;
    let state: SealedState;
    try {
      state = await toolDeps.connection.requestState.open(ctx.requestState, relayBinding(ctx, name, digest));
    } catch (err) {
      // Another step of this call (its connect flow, an account choice): runConnectionTool's.
      if (err instanceof RequestStateError && err.otherPhase) return undefined;
      if (err instanceof RequestStateError) throw invalidParams(err.message, { cause: err });
      throw err;
    }
    const inputResponses: Record<string, unknown> = {};
    for (const key of state.inputKeys) {
      const raw = ctx.inputResponses?.[key];
      if (raw === undefined) continue;
      const reply = ElicitResultSchema.safeParse(raw);
      if (!reply.success)
        throw new InvalidInputError(`inputResponses.${key} is not an elicitation result ({action}). Nothing was done.`);
      inputResponses[key] = reply.data;
    }
    return { inputResponses, requestState: state.upstreamState, receiptId: state.receiptId };
  }

  /** The receipt a relayed question's state names: this caller's accepted operation of this call, else refused. */
  async function receiptFor(toolDeps: McpToolDeps, ctx: ToolContext, call: ConnectionCall, receiptId: string) {
    const receipt = await findReceiptById(toolDeps.connection.broker.pool, receiptId);
    const key =
      receipt &&
      operationKey({
        principal: ctx.principal,
        tool: call.tool,
        requestDigest: call.requestDigest,
        navigationId: receipt.navigationId,
      });
    if (!receipt || key !== receipt.operationKey)
      throw invalidParams('requestState names no operation of this call; call the tool again without it');
    return receipt;
  }

  // Each name's tool, built once (its descriptor is a JSON Schema conversion): names are the caller's, so at most MAX_FOUND.
  const found = new Map<string, ConnectionTool>();
  function find(name: string): ConnectionTool | undefined {
    const known = found.get(name);
    if (known) return known;
    const tool = build(name);
    if (!tool) return undefined;
    found.set(name, tool);
    // Oldest first out: a Map iterates in insertion order.
    if (found.size > MAX_FOUND) found.delete(found.keys().next().value!);
    return tool;
  }

  function build(name: string): ConnectionTool | undefined {
    if (!TOOL_NAME.test(name)) return undefined;
    const provider = byPrefix.get(name.slice(0, name.indexOf('_')));
    if (!provider) return undefined;
    const callOf = (rawArgs: unknown, toolDeps: McpToolDeps) =>
      connectionCall(
        provider,
        name,
        parseArguments(name, ArgumentsSchema, rawArgs) as Record<string, unknown>,
        toolDeps,
      );
    const tool = defineTool({
      name,
      title: name,
      description: `A tool of ${provider.displayName}.`,
      inputSchema: ArgumentsSchema,
      handler: async (input, ctx, toolDeps: McpToolDeps) => {
        const args = input as Record<string, unknown>;
        const resume = await resumeOf(toolDeps, ctx, name, argumentsDigest([name, canonicalJson(args)]));
        // A relayed answer goes back to the upstream as the first call went: connected, or through its receipt.
        const asked = resume ? { ...ctx, requestState: undefined, inputResponses: undefined } : ctx;
        const call = connectionCall(provider, name, args, toolDeps, resume);
        if (resume?.receiptId !== undefined)
          return runAccepted(toolDeps.connection, asked, call, await receiptFor(toolDeps, ctx, call, resume.receiptId));
        return runConnectionTool(toolDeps.connection, asked, call);
      },
    });
    return { ...tool, provider: provider.id, scopes: [], connectionCall: callOf };
  }

  return {
    find,
    async list(principal) {
      const parts = await Promise.all(ordered.map((p) => listOne(principal, p)));
      const listed = parts.filter((p): p is ToolListing => p !== undefined);
      if (listed.length === 0) return { tools: [], ttlMs: DEFAULT_LIST_TTL_MS, cacheScope: 'public' };
      return { tools: listed.flatMap((p) => p.tools), ...combineHints(...listed) };
    },
  };
}

const failed = (message: string): BusinessOutcome => ({
  status: 'failed',
  outcome: { error: 'input_required', message },
});

const relayBinding = (ctx: ToolContext, tool: string, digest: string): StateBinding => ({
  principal: ctx.principal,
  clientId: ctx.clientId,
  method: 'tools/call',
  tool,
  digest,
  phase: UPSTREAM_INPUT_PHASE,
});

/** The upstream's result as the host gets it; the broker's own words for what went wrong before it. */
function renderOutcome(outcome: Record<string, unknown>): ToolCallResult {
  const relayed = outcome['relayed'];
  if (typeof relayed === 'object' && relayed !== null) return relayed as ToolCallResult;
  const result = outcome['result'];
  if (typeof result === 'object' && result !== null) {
    // What the broker did not ask for the upstream, after its own content.
    const notes = Array.isArray(outcome['notes']) ? (outcome['notes'] as unknown[]).map(String) : [];
    const content = (result as { content?: unknown }).content;
    return {
      ...(result as object),
      ...(notes.length > 0 && {
        content: [...(Array.isArray(content) ? content : []), ...notes.map((text) => ({ type: 'text', text }))],
      }),
      resultType: 'complete',
    } as ToolCallResult;
  }
  return errorResult(String(outcome['message'] ?? 'The upstream MCP server did not answer.'), outcome);
}

/** JSON with object keys sorted at every level: equal arguments, one digest. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}
