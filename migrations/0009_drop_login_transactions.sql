-- The broker's own sign-in keeps its transaction (state digest, sealed PKCE
-- verifier, nonce, return_to, expiry) in a sealed, HttpOnly cookie bound to
-- the state (src/auth/loginCookie.ts): nothing is written before the user
-- comes back from the identity provider, and no verifier is at rest here.
DROP TABLE login_transactions;
