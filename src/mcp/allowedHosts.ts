const LOOPBACK = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * The Host and Origin values the MCP endpoint answers to (DNS-rebinding
 * protection, MCP 2026-07-28 Streamable HTTP, Security): the public URL's, and on loopback the other
 * loopback names for the same port.
 */
export function allowedHostsFor(publicUrl: URL): { hosts: Set<string>; origins: Set<string> } {
  const port = publicUrl.port ? `:${publicUrl.port}` : '';
  const names = LOOPBACK.includes(publicUrl.hostname) ? LOOPBACK : [publicUrl.hostname];
  // On loopback, an http:// Origin for our own port is also ours (tools build it so); nothing serves
  // plain-HTTP pages on this TLS port, and a rebinding page's Origin still names its foreign host.
  const protocols = names === LOOPBACK ? ['https:', 'http:'] : [publicUrl.protocol];
  return {
    hosts: new Set(names.map((name) => `${name}${port}`)),
    origins: new Set(protocols.flatMap((protocol) => names.map((name) => `${protocol}//${name}${port}`))),
  };
}
