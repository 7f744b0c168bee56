export interface BannerFacts {
  publicUrl: URL;
  mcpResourceUrl: string;
  issuer: string;
  database: string;
  /** MCP_ALLOW_ANONYMOUS is on: said loudly. */
  anonymousMcp: boolean;
  /** networkHost: DEV_ALLOW_NETWORK=true let the development servers listen on this non-loopback host. */
  dev?: {
    reportsIssuer: string;
    reportsApiUrl: string;
    githubOrigin: string | undefined;
    /** The development upstream MCP server's endpoint, when it runs. */
    upstreamUrl: string | undefined;
    caFile: string;
    networkHost: string | undefined;
    /** The demo users as shown (`ops (operator)`), and their one password. */
    users: readonly string[];
    password: string;
  };
}

/** What `npm start` prints once everything listens: every URL served, and the demo users. */
export function banner(facts: BannerFacts): string {
  const base = facts.publicUrl.href.replace(/\/$/, '');
  const lines = [
    '',
    'Connect Broker is running.',
    `  Web app (sign-in)          ${base}/`,
    `  MCP endpoint               ${facts.mcpResourceUrl}  (MCP 2026-07-28, POST)`,
    `  Protected resource meta    ${base}/.well-known/oauth-protected-resource/mcp`,
    `  Connect pages              ${base}/connect/…  (links come from tools that need a connection)`,
    `  Operator pages             ${base}/ops  (users with the operator role)`,
    `  Metrics (Prometheus)       ${base}/metrics`,
    `  Health                     ${base}/healthz  ${base}/readyz`,
    `  Identity provider          ${facts.issuer}`,
    `  Database                   ${facts.database}`,
  ];
  if (facts.dev) {
    lines.push(
      `  Report Service (OAuth)     ${facts.dev.reportsIssuer}`,
      `  Report Service API         ${facts.dev.reportsApiUrl}/reports`,
      ...(facts.dev.githubOrigin
        ? [
            `  GitHub-like provider       ${facts.dev.githubOrigin}  (plain OAuth 2.0; the github catalog entry, host ${new URL(facts.dev.githubOrigin).host})`,
          ]
        : []),
      ...(facts.dev.upstreamUrl
        ? [`  Upstream MCP server        ${facts.dev.upstreamUrl}  (the memo_* tools, proxied through the broker)`]
        : []),
      `  Development CA             ${facts.dev.caFile}  (trust it, or accept the warning once per port)`,
      '',
      `Demo users: ${facts.dev.users.join(', ')}. Development password for all: ${facts.dev.password}`,
      'MCP access token:  npm run broker -- dev-token --user alice',
      'Operator CLI:      export BROKER_OPERATOR_TOKEN=$(npm run -s broker -- dev-token --user ops); npm run broker -- ledger flows',
    );
  }
  if (facts.dev?.networkHost) {
    lines.push(
      '',
      `!! DEV_ALLOW_NETWORK=true: development mode listens on ${facts.dev.networkHost}, beyond loopback, with known demo passwords.`,
      '!! Publish these ports to loopback only (as docker-compose.yml does); never on a shared network.',
    );
  }
  if (facts.anonymousMcp) {
    lines.push(
      '',
      '!! MCP_ALLOW_ANONYMOUS=true: /mcp serves requests WITHOUT a bearer token as an anonymous principal.',
      '!! Development and loopback only; never expose this server.',
    );
  }
  lines.push('Press Ctrl-C to stop.', '');
  return lines.join('\n');
}
