import { hasOperatorRole } from '../auth/operatorRole.js';
import type { Principal } from '../auth/principal.js';
import type { Config } from '../config/config.js';
import { createPool, type Pool } from '../db/pool.js';
import { AppError } from '../errors/appError.js';
import { recordOperatorAction } from '../ledger/operatorRepo.js';
import { createClaimsVerifier } from '../mcp/mcpAuth.js';
import { systemClock } from '../shared/clock.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { databaseUrl, deploymentFetch, deploymentIssuer } from './deployment.js';

export class OperatorAuthError extends Error {
  constructor(
    message: string,
    /** 3: not an operator (refused and recorded); 2: no usable credential. */
    readonly exitCode: 2 | 3,
  ) {
    super(message);
  }
}

const HOW_TO =
  'Set BROKER_OPERATOR_TOKEN to an access token for the broker (audience: its /mcp resource URL, or MCP_TOKEN_AUDIENCE) from your identity provider, for a user with the operator role. Development: export BROKER_OPERATOR_TOKEN=$(npm run -s broker -- dev-token --user ops)';

/**
 * The operator behind a `broker ledger` or `broker keys` command (`command`, as typed after
 * `broker`, e.g. `ledger verify`): the CLI
 * holds database credentials, and on top of them every command needs an IdP
 * access token carrying the operator role, verified like an MCP bearer token
 * (JWKS, pinned algorithms, issuer, audience). A non-operator is refused and
 * the refusal recorded. Returns the operator: its identity, and the actor
 * recorded with actions (cli:<sub>).
 */
export async function authenticateOperator(
  config: Readonly<Config>,
  pool: Pool,
  command: string,
): Promise<{ actor: string; subject: Principal }> {
  const token = config.cli.operatorToken?.reveal();
  if (!token) throw new OperatorAuthError(`Operator commands need an operator's token. ${HOW_TO}`, 2);
  const issuer = deploymentIssuer(config);
  const verify = createClaimsVerifier({
    issuer,
    audience: config.mcp.tokenAudience ?? config.http.mcpResourceUrl,
    requiredScope: undefined,
    jwtTyp: config.mcp.jwtTyp,
    fetch: await deploymentFetch(config),
    clock: systemClock,
    allowLoopback: config.mode !== 'production',
  });
  let verified;
  try {
    verified = await verify(`Bearer ${token}`);
  } catch (err) {
    if (err instanceof AppError)
      throw new OperatorAuthError(`BROKER_OPERATOR_TOKEN was not accepted (${err.message}) by ${issuer}. ${HOW_TO}`, 2);
    throw err;
  }
  const actor = `cli:${verified.principal.sub}`;
  if (!hasOperatorRole(verified.claims, config.operators)) {
    await recordOperatorAction(
      pool,
      'access_refused',
      `not an operator: broker ${command}`,
      actor,
      { command },
      new Date(),
    );
    throw new OperatorAuthError(
      `${verified.principal.sub} is not an operator (no "${config.operators.role}" in the ${config.operators.roleClaim} claim); refused and recorded.`,
      3,
    );
  }
  return { actor, subject: verified.principal };
}

/** The operator a command runs as: its identity, and the actor recorded with its actions. */
export type Operator = Awaited<ReturnType<typeof authenticateOperator>>;

/**
 * Every operator command's start and end: a small pool on the deployment's database, the operator
 * authenticated (a refusal thrown as the command's own error, `refused`, with its exit code), then
 * `run`; the pool ends whatever happens.
 */
export async function withOperator<T>(
  config: Readonly<Config>,
  command: string,
  refused: (message: string, exitCode: 2 | 3) => Error,
  run: (pool: Pool, operator: Operator) => Promise<T>,
  options: { poolMax?: number; logger?: Logger } = {},
): Promise<T> {
  const pool = createPool(
    { url: await databaseUrl(config), poolMax: options.poolMax ?? 2 },
    options.logger ?? createLogger({ level: 'silent' }),
  );
  try {
    const operator = await authenticateOperator(config, pool, command).catch((err: unknown) => {
      throw err instanceof OperatorAuthError ? refused(err.message, err.exitCode) : err;
    });
    return await run(pool, operator);
  } finally {
    await pool.end();
  }
}
