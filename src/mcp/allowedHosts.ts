const LOOPBACK = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * The Host and Origin values the MCP endpoint answers to (DNS-rebinding
 * protection, spec brief §7): the public URL's, and on loopback the other
 * loopback names for the same port.
 */
export function allowedHostsFor(publicUrl: URL): { hosts: Set<string>; origins: Set<string> } {
  const port = publicUrl.port ? `:${publicUrl.port}` : '';
  const names = LOOPBACK.includes(publicUrl.hostname) ? LOOPBACK : [publicUrl.hostname];
  return {
    hosts: new Set(names.map((name) => `${name}${port}`)),
    origins: new Set(names.map((name) => `${publicUrl.protocol}//${name}${port}`)),
  };
}
