/** Query parameters whose values never reach a log line (case-insensitive). */
export const SECRET_QUERY_PARAMETERS = [
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'password',
  'api_key',
  'api_key_secret',
  'client_secret',
  'secret',
  'code',
];
const SECRET_QUERY = new Set(SECRET_QUERY_PARAMETERS);

/** `url` with the values of secret query parameters replaced by `[REDACTED]`. */
export function redactUrl(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const query = url
    .slice(start + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const rawName = equals === -1 ? pair : pair.slice(0, equals);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // a malformed name is logged as sent
      }
      return equals !== -1 && SECRET_QUERY.has(name.toLowerCase()) ? `${rawName}=[REDACTED]` : pair;
    });
  return `${url.slice(0, start)}?${query.join('&')}`;
}
