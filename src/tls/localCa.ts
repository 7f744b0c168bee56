import { webcrypto } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
// @peculiar/x509 2.x needs a Reflect metadata polyfill loaded before it (its README).
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

export interface TlsMaterial {
  /** PEM of the CA that signed `cert`; every server-to-server call trusts it. */
  caPem: string;
  certPem: string;
  keyPem: string;
}

const ecdsa = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const signing = { name: 'ECDSA', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Loads the development CA and server certificate from `dir`, generating them
 * once (ECDSA P-256; CA valid 10 years, leaf 1 year, SANs 127.0.0.1, ::1 and
 * localhost). The CA private key never leaves `dir`.
 */
export async function loadOrCreateLocalTls(dir: string, now: Date = new Date()): Promise<TlsMaterial> {
  const paths = { ca: join(dir, 'ca.pem'), cert: join(dir, 'server.pem'), key: join(dir, 'server-key.pem') };
  const existing = await readAll([paths.ca, paths.cert, paths.key]);
  if (existing) {
    const [caPem, certPem, keyPem] = existing;
    if (new x509.X509Certificate(certPem).notAfter.getTime() > now.getTime() + DAY_MS) {
      return { caPem, certPem, keyPem };
    }
  }
  const material = await createLocalTls(now);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(join(dir, 'ca-key.pem'), material.caKeyPem, { mode: 0o600 });
  await writeFile(paths.ca, material.caPem, { mode: 0o644 });
  await writeFile(paths.key, material.keyPem, { mode: 0o600 });
  await writeFile(paths.cert, material.certPem, { mode: 0o644 });
  return { caPem: material.caPem, certPem: material.certPem, keyPem: material.keyPem };
}

async function readAll(files: string[]): Promise<[string, string, string] | undefined> {
  try {
    const [a, b, c] = await Promise.all(files.map((f) => readFile(f, 'utf8')));
    return a && b && c ? [a, b, c] : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function createLocalTls(now: Date): Promise<TlsMaterial & { caKeyPem: string }> {
  const crypto = webcrypto;
  const caKeys = await crypto.subtle.generateKey(ecdsa, true, ['sign', 'verify']);
  const caName = 'CN=Connect Broker development CA';
  const ca = await x509.X509CertificateGenerator.createSelfSigned(
    {
      name: caName,
      keys: caKeys,
      signingAlgorithm: signing,
      notBefore: new Date(now.getTime() - DAY_MS),
      notAfter: new Date(now.getTime() + 3650 * DAY_MS),
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
      subject: 'CN=127.0.0.1',
      issuer: ca.subject,
      publicKey: leafKeys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: signing,
      notBefore: new Date(now.getTime() - DAY_MS),
      notAfter: new Date(now.getTime() + 365 * DAY_MS),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
        new x509.SubjectAlternativeNameExtension([
          { type: 'ip', value: '127.0.0.1' },
          { type: 'ip', value: '::1' },
          { type: 'dns', value: 'localhost' },
        ]),
        await x509.AuthorityKeyIdentifierExtension.create(ca, false, crypto),
      ],
    },
    crypto,
  );
  return {
    caPem: ca.toString('pem'),
    caKeyPem: await exportPkcs8(crypto, caKeys.privateKey),
    certPem: leaf.toString('pem'),
    keyPem: await exportPkcs8(crypto, leafKeys.privateKey),
  };
}

async function exportPkcs8(crypto: webcrypto.Crypto, key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await crypto.subtle.exportKey('pkcs8', key)).toString('base64');
  const lines = der.match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join('\n')}\n-----END PRIVATE KEY-----\n`;
}
