/* global document, location, history */
// The connect page's script (served as written, same origin, no dependency). A kasm_url is
// `/#/connect/kasm/<kasm_id>/<user_id>/<token>`: the fragment never reaches the server, so this reads
// it, takes it out of the address bar and the history (the token is single-use anyway), exchanges
// the token at POST /connect for the session's cookie, and opens the session's path.
(() => {
  'use strict';
  const status = document.getElementById('status');
  const say = (text, failed) => {
    status.textContent = text;
    status.dataset.state = failed ? 'failed' : 'working';
  };

  const match = /^#\/connect\/kasm\/([0-9a-f]{32})\/([0-9a-f]{32})\/([A-Za-z0-9_-]{1,128})$/.exec(
    location.hash,
  );
  if (!match) {
    say(
      'This page opens a workspace session from its link (a kasm_url ending in ' +
        '#/connect/kasm/<kasm_id>/<user_id>/<token>). This address holds none.',
      true,
    );
    return;
  }
  const [, kasmId, userId, token] = match;
  history.replaceState(null, '', location.pathname + location.search);

  fetch('connect', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify({ kasm_id: kasmId, user_id: userId, token }),
  })
    .then(async (response) => {
      const body = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(body.error_message || `The service answered ${response.status}`);
      say('Connected: opening your workspace…');
      location.replace(body.session_url);
    })
    .catch((error) => say(error instanceof Error ? error.message : String(error), true));
})();
