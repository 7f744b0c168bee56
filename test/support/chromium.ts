import { createHash, X509Certificate } from 'node:crypto';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Debian's Chromium, headless. It trusts exactly our development server key
 * (by SPKI pin), so pages load over real HTTPS without turning certificate
 * checks off for anything else. `extraArgs`: more switches (e.g. host rules).
 */
export async function launchChromium(certPem: string, extraArgs: readonly string[] = []): Promise<Browser> {
  const spki = new X509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' });
  const pin = createHash('sha256').update(spki).digest('base64');
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--ignore-certificate-errors-spki-list=${pin}`,
      ...extraArgs,
    ],
  });
}
