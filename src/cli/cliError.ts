/**
 * A command's refusal, which `broker` prints as `broker: <message>` and exits with: 2 for usage or
 * configuration, 1 for a check that failed, 3 for a refusal by the running service. Each command's
 * own error extends it, so the entry maps every one the same way (src/cli/broker.ts).
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = 2,
  ) {
    super(message);
  }
}
