import { readFile } from 'node:fs/promises';

/** TLS_CA_FILE named a file that cannot be read. */
export class CaFileError extends Error {}

/**
 * The CAs outbound calls trust beside the system roots, for the service and the CLI alike: the
 * development CA (development only; skipped until the service has written it) and TLS_CA_FILE
 * whenever it is set, in development too, so a provider on a private CA can be tried with
 * `npm start`.
 */
export async function readTrustedCas(files: {
  devCaFile: string | undefined;
  caFile: string | undefined;
}): Promise<string[]> {
  const pems: string[] = [];
  if (files.devCaFile !== undefined) {
    const dev = await readFile(files.devCaFile, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (dev !== undefined) pems.push(dev);
  }
  if (files.caFile !== undefined) {
    try {
      pems.push(await readFile(files.caFile, 'utf8'));
    } catch (cause) {
      throw new CaFileError(`TLS_CA_FILE ${files.caFile} cannot be read: ${(cause as Error).message}`, { cause });
    }
  }
  return pems;
}
