import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import type { Config } from '../config/config.js';
import { fail, ok, reasonOf, warn, type Finding } from './doctorFinding.js';

const DAY_MS = 24 * 60 * 60 * 1000;
// Long enough to renew in office hours; ACME clients renew at 30 days.
const EXPIRY_WARNING_DAYS = 14;

/**
 * TLS_CERT_FILE and TLS_KEY_FILE as start-up reads them (main.ts readTls): readable, the key the
 * certificate's, valid now and for a while, and naming PUBLIC_URL's host; TLS_CA_FILE readable.
 * Nothing of a key is ever printed.
 */
export async function checkTls(tls: Config['tls'], publicUrl: URL, production: boolean, now: Date): Promise<Finding[]> {
  if (!tls.certFile || !tls.keyFile) {
    return production
      ? [] // loadConfig has already said which is missing
      : [ok('TLS_CERT_FILE', 'not set: development mode serves a certificate of its local CA')];
  }
  const findings: Finding[] = [];
  const certPem = await readFile(tls.certFile, 'utf8').catch((err: unknown) => {
    findings.push(fail('TLS_CERT_FILE', `${tls.certFile} cannot be read (${reasonOf(err)})`));
  });
  const keyPem = await readFile(tls.keyFile, 'utf8').catch((err: unknown) => {
    findings.push(fail('TLS_KEY_FILE', `${tls.keyFile} cannot be read (${reasonOf(err)})`));
  });
  if (tls.caFile) {
    const caPem = await readFile(tls.caFile, 'utf8').catch((err: unknown) => {
      findings.push(fail('TLS_CA_FILE', `${tls.caFile} cannot be read (${reasonOf(err)})`));
    });
    if (caPem !== undefined)
      findings.push(
        certificateOf(caPem)
          ? ok('TLS_CA_FILE', `${tls.caFile} holds a certificate`)
          : fail('TLS_CA_FILE', `${tls.caFile} holds no PEM certificate`),
      );
  }
  const cert = certPem === undefined ? undefined : certificateOf(certPem);
  if (certPem !== undefined && !cert) findings.push(fail('TLS_CERT_FILE', `${tls.certFile} holds no PEM certificate`));
  let key: KeyObject | undefined;
  if (keyPem !== undefined) {
    try {
      key = createPrivateKey(keyPem);
    } catch {
      findings.push(fail('TLS_KEY_FILE', `${tls.keyFile} holds no private key (PEM, unencrypted)`));
    }
  }
  if (cert && key) {
    findings.push(
      cert.checkPrivateKey(key)
        ? ok('TLS_KEY_FILE', `the private key of the certificate in ${tls.certFile}`)
        : fail('TLS_KEY_FILE', `${tls.keyFile} is not the key of the certificate in ${tls.certFile}`),
    );
  }
  if (cert) findings.push(validity(cert, tls.certFile, now), coverage(cert, tls.certFile, publicUrl));
  return findings;
}

function certificateOf(pem: string): X509Certificate | undefined {
  try {
    return new X509Certificate(pem); // the first of a chain: the server's own
  } catch {
    return undefined;
  }
}

function validity(cert: X509Certificate, file: string, now: Date): Finding {
  const from = new Date(cert.validFrom);
  const to = new Date(cert.validTo);
  if (now < from) return fail('TLS_CERT_FILE', `${file} is not valid before ${from.toISOString()}`);
  if (now > to) return fail('TLS_CERT_FILE', `${file} expired ${to.toISOString()}: renew it`);
  const days = Math.floor((to.getTime() - now.getTime()) / DAY_MS);
  return days < EXPIRY_WARNING_DAYS
    ? warn('TLS_CERT_FILE', `${file} expires ${to.toISOString()}, in ${days} days: renew it`)
    : ok('TLS_CERT_FILE', `${file} valid until ${to.toISOString()}`);
}

function coverage(cert: X509Certificate, file: string, publicUrl: URL): Finding {
  const host = publicUrl.hostname.replace(/^\[|\]$/g, '');
  const covered = isIP(host) ? cert.checkIP(host) !== undefined : cert.checkHost(host) !== undefined;
  return covered
    ? ok('TLS_CERT_FILE', `names ${host} (PUBLIC_URL's host)`)
    : fail(
        'TLS_CERT_FILE',
        `${file} does not name ${host}, PUBLIC_URL's host (it names ${cert.subjectAltName ?? cert.subject.replace(/\n/g, ', ')})`,
      );
}
