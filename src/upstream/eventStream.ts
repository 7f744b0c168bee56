/**
 * Reads an event stream as it comes (the SSE format, HTML Living Standard §9.2): each event's
 * `data` (its lines joined) is given to `found`. Comments, ids and event names are not needed here.
 */
export function eventData(found: (data: string) => void): (chunk: Uint8Array) => void {
  const decoder = new TextDecoder();
  let pending = '';
  let data: string[] = [];
  return (chunk) => {
    pending += decoder.decode(chunk, { stream: true });
    const lines = pending.split(/\r\n|\r|\n/);
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
      else if (line === '' && data.length > 0) {
        const event = data.join('\n');
        data = [];
        found(event);
      }
    }
  };
}
