// The development identity provider's public client for `broker dev-token` (src/cli/devToken.ts):
// registered by the development stack, used by the CLI.
export const DEV_TOKEN_CLIENT_ID = 'broker-dev-token';
// A loopback redirect (RFC 8252 §7.3) that nothing listens on: the CLI reads the code from the Location header.
export const DEV_TOKEN_REDIRECT_URI = 'http://127.0.0.1/dev-token/callback';
