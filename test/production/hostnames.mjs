// Test-only preload (node --import) for the rehearsal's processes, the built broker and its CLI
// among them: every name under rehearsal.example resolves to 127.0.0.1, as a hosts file or an
// internal DNS zone would make it. Nothing in the broker knows; other names resolve as usual.
// Plain JavaScript, so the built broker (node dist/main.js, no tsx) can load it.
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';

const SUFFIX = '.rehearsal.example';
const original = dns.lookup;
const originalPromise = dns.promises.lookup;

const mapped = (hostname) => typeof hostname === 'string' && hostname.toLowerCase().endsWith(SUFFIX);

dns.lookup = function lookup(hostname, options, callback) {
  if (!mapped(hostname)) return original.call(this, hostname, options, callback);
  const done = typeof options === 'function' ? options : callback;
  const all = typeof options === 'object' && options !== null && options.all === true;
  if (all) process.nextTick(done, null, [{ address: '127.0.0.1', family: 4 }]);
  else process.nextTick(done, null, '127.0.0.1', 4);
  return {};
};
dns.promises.lookup = async function lookup(hostname, options) {
  if (!mapped(hostname)) return originalPromise.call(this, hostname, options);
  const answer = { address: '127.0.0.1', family: 4 };
  return typeof options === 'object' && options !== null && options.all === true ? [answer] : answer;
};
syncBuiltinESMExports();
