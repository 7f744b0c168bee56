// The error page's heading says what happened, by the answer's status, rather than one line for all:
// the message under it (errors/toHttp.ts) says why.
const TITLES: Readonly<Record<number, string>> = {
  400: 'This request cannot be used',
  401: 'Sign-in needed',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Not allowed here',
  409: 'Not possible now',
  410: 'No longer available',
  413: 'Too large',
  415: 'Not a form this page reads',
  429: 'Too many requests',
  503: 'Not available right now',
};

/** The error page's title for an HTTP status. */
export function errorTitleOf(status: number): string {
  return TITLES[status] ?? (status >= 500 ? 'Something went wrong' : 'This request cannot be used');
}
