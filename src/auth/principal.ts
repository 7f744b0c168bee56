/** An authenticated identity: the (issuer, subject) pair of a verified token or sign-in; never clientInfo or arguments. */
export interface Principal {
  iss: string;
  sub: string;
}

export function samePrincipal(a: Principal, b: Principal): boolean {
  return a.iss === b.iss && a.sub === b.sub;
}
