import { webcrypto } from 'node:crypto';
// @peculiar/x509 2.x needs a Reflect metadata polyfill loaded before it (its README).
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import type { TlsMaterial } from '../../src/tls/localCa.js';

// The rehearsal's own CA and one server certificate for every name it serves (the broker, the
// identity provider, the provider emulator, the upstream MCP server), as an operator's internal CA
// would issue them. The broker trusts the CA through TLS_CA_FILE; Chromium pins the leaf's key.

const ecdsa = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const signing = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 60 * 60 * 1000;

export async function createRehearsalTls(names: readonly string[], now = new Date()): Promise<TlsMaterial> {
  const crypto = webcrypto;
  const caKeys = await crypto.subtle.generateKey(ecdsa, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned(
    {
      name: 'CN=Connect Broker rehearsal CA',
      keys: caKeys,
      signingAlgorithm: signing,
      notBefore: new Date(now.getTime() - DAY_MS),
      notAfter: new Date(now.getTime() + 90 * DAY_MS),
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  const leafKeys = await crypto.subtle.generateKey(ecdsa, true, ['sign', 'verify']);
  const leaf = await x509.X509CertificateGenerator.create(
    {
      subject: `CN=${names[0]}`,
      issuer: ca.subject,
      publicKey: leafKeys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: signing,
      notBefore: new Date(now.getTime() - DAY_MS),
      notAfter: new Date(now.getTime() + 90 * DAY_MS),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
        new x509.SubjectAlternativeNameExtension(names.map((value) => ({ type: 'dns' as const, value }))),
        await x509.AuthorityKeyIdentifierExtension.create(ca, false, crypto),
      ],
    },
    crypto,
  );
  const der = Buffer.from(await crypto.subtle.exportKey('pkcs8', leafKeys.privateKey)).toString('base64');
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${(der.match(/.{1,64}/g) ?? []).join('\n')}\n-----END PRIVATE KEY-----\n`;
  return { caPem: ca.toString('pem'), certPem: leaf.toString('pem'), keyPem };
}
