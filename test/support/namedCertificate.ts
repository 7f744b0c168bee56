import { webcrypto } from 'node:crypto';
// @peculiar/x509 2.x needs a Reflect metadata polyfill loaded before it (src/tls/localCa.ts).
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

const DAY_MS = 24 * 60 * 60 * 1000;
const ecdsa = { name: 'ECDSA', namedCurve: 'P-256' } as const;

/**
 * A self-signed server certificate for `host` and its key, as PEM, valid from a day ago for
 * `days` days: what an operator's TLS_CERT_FILE and TLS_KEY_FILE hold (src/tls/localCa.ts makes
 * only loopback ones).
 */
export async function namedCertificate(host: string, days = 90): Promise<{ certPem: string; keyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(ecdsa, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      name: `CN=${host}`,
      keys,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      notBefore: new Date(now - DAY_MS),
      notAfter: new Date(now + days * DAY_MS),
      extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }])],
    },
    webcrypto,
  );
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${der.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
  return { certPem: cert.toString('pem'), keyPem };
}
