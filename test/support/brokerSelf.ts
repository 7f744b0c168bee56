import type { BrokerSelf } from '../../src/providers/selfReference.js';

/**
 * A broker's own origin and identity provider for tests that parse provider entries without a
 * running broker: names no test server uses, so no entry of theirs is refused as the broker's own.
 */
export const TEST_SELF: BrokerSelf = {
  publicUrl: new URL('https://broker.self.example'),
  issuer: 'https://idp.self.example',
};
