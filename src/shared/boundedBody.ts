/**
 * A response's whole body, buffered; undefined when it is over `maxBytes`
 * (as declared by Content-Length, or as read), and then the rest is cancelled.
 */
export async function readBoundedBody(response: Response, maxBytes: number): Promise<Buffer | undefined> {
  const tooLong = async (): Promise<undefined> => {
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  };
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) return tooLong();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      if (size > maxBytes) return tooLong();
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks);
}
