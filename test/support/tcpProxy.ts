import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy a test puts between the broker and Postgres, to take the database away
 * and give it back without touching the server itself (so it works for the embedded cluster and
 * an external one alike, and for one schema among a run's many).
 */
export interface TcpProxy {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  /** Database down: new connections are refused and every open one is cut. */
  cut(): Promise<void>;
  /** Host unreachable: new connections are accepted and never answered; every open one is cut. */
  stall(): Promise<void>;
  /** Back: new connections are forwarded again (the cut ones stay cut, as after a restart). */
  restore(): Promise<void>;
  /**
   * Arms one cut: once a connection's client has sent each of `texts` in order (SQL travels as
   * text in Parse and Query messages), cut() happens before that chunk reaches the server, or
   * just after it with `forwardLast` (the server gets it, its answer is lost). Resolves then.
   */
  cutWhen(texts: readonly string[], options?: { forwardLast?: boolean }): Promise<void>;
  /** Connections opened through the proxy so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

type Mode = 'open' | 'refusing' | 'stalling';

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  /** Index of the next armed text this connection has to send, and the tail of what it sent. */
  matched: number;
  tail: string;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let mode: Mode = 'open';
  let accepted = 0;
  let armed: { texts: readonly string[]; forwardLast: boolean; fired(): void } | undefined;
  let server: Server;

  const drop = (pair: Pair) => {
    pairs.delete(pair);
    pair.client.destroy();
    pair.upstream?.destroy();
  };
  const cutAll = () => {
    for (const pair of [...pairs]) drop(pair);
  };

  const onClientData = (pair: Pair, chunk: Buffer) => {
    if (!pair.upstream) return; // stalled: swallowed
    if (armed) {
      const seen = pair.tail + chunk.toString('latin1');
      pair.tail = seen.slice(-256);
      let from = 0;
      while (armed && pair.matched < armed.texts.length) {
        const at = seen.indexOf(armed.texts[pair.matched]!, from);
        if (at < 0) break;
        from = at + 1;
        pair.matched++;
      }
      if (armed && pair.matched === armed.texts.length) {
        const { forwardLast, fired } = armed;
        armed = undefined;
        if (forwardLast) {
          // Flushed to the server, then closed; whatever it answers goes nowhere.
          const upstream = pair.upstream;
          pairs.delete(pair);
          pair.client.destroy();
          upstream.end(chunk);
          upstream.on('data', () => undefined);
          upstream.on('end', () => upstream.destroy());
        }
        void refuse().then(fired);
        return;
      }
    }
    pair.upstream.write(chunk);
  };

  const onConnection = (client: Socket) => {
    accepted++;
    const pair: Pair = { client, upstream: undefined, matched: 0, tail: '' };
    pairs.add(pair);
    client.on('error', () => drop(pair));
    client.on('close', () => drop(pair));
    client.on('data', (chunk: Buffer) => onClientData(pair, chunk));
    if (mode === 'stalling') return;
    const upstream = connect(target.port, target.host);
    pair.upstream = upstream;
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    upstream.on('error', () => drop(pair));
    upstream.on('close', () => drop(pair));
  };

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server = createServer(onConnection);
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  const stopListening = () => new Promise<void>((resolve) => server.close(() => resolve()));
  const refuse = async () => {
    if (mode === 'refusing') return cutAll();
    const wasListening = mode === 'open' || mode === 'stalling';
    mode = 'refusing';
    const closed = wasListening ? stopListening() : Promise.resolve();
    cutAll();
    await closed;
  };

  await listen(0);
  const address = server!.address();
  if (typeof address !== 'object' || !address) throw new Error('the proxy has no port');
  const { port } = address;

  return {
    port,
    via(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.href;
    },
    cut: refuse,
    async stall() {
      if (mode === 'refusing') await listen(port);
      mode = 'stalling';
      cutAll();
    },
    async restore() {
      const was = mode;
      if (was === 'refusing') await listen(port);
      mode = 'open';
      // Stalled connections never reached the server: their clients find out now, as after a partition.
      if (was === 'stalling') cutAll();
    },
    cutWhen(texts, options = {}) {
      for (const pair of pairs) {
        pair.matched = 0;
        pair.tail = '';
      }
      return new Promise<void>((fired) => {
        armed = { texts, forwardLast: options.forwardLast ?? false, fired };
      });
    },
    get accepted() {
      return accepted;
    },
    async close() {
      armed = undefined;
      if (mode !== 'refusing') {
        mode = 'refusing';
        const closed = stopListening();
        cutAll();
        await closed;
      } else cutAll();
    },
  };
}
