import { createHash, randomBytes } from 'node:crypto';

/**
 * How long a connect token (the last segment of `kasm_url`) may wait to be exchanged by the connect
 * page; each get_kasm_status of a running session issues a new one, which replaces it.
 */
export const CONNECT_TOKEN_TTL_SECONDS = 600;

/** The stored form of a connect token: its SHA-256 (the token is 256 random bits, no salt needed). */
export const hashConnectToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** A new one-time connect token (URL-safe), with what the session row stores of it. */
export function newConnectToken() {
  const token = randomBytes(32).toString('base64url');
  return { token, stored: { hash: hashConnectToken(token), ttlSeconds: CONNECT_TOKEN_TTL_SECONDS } };
}

/** What a session row stores of a connect token: its hash, valid for `ttlSeconds` from now (the database's clock). */
export interface StoredConnectToken {
  hash: string;
  ttlSeconds: number;
}

/** Kasm's connect path: the page at `/` reads it and exchanges the token for a session cookie. */
export const kasmUrlOf = (kasmId: string, userId: string, token: string) =>
  `/#/connect/kasm/${kasmId}/${userId}/${token}`;
