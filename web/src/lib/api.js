// SPDX-License-Identifier: Apache-2.0
// Talks to the daemon: same-origin fetches carrying the session cookie, the token-for-cookie
// exchange on first load, and the connection state the banner shows (ok, unreachable,
// unauthenticated). Every POST sends X-Gpuq-Csrf: 1; the browser adds Origin.
import { setConnection } from './state.js';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

async function request(path, { method = 'GET', body, headers = {}, signal } = {}) {
  const init = { method, credentials: 'same-origin', headers: { ...headers }, signal };
  if (method !== 'GET' && method !== 'HEAD') {
    init.headers['X-Gpuq-Csrf'] = '1';
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body ?? {});
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    setConnection('down', e.message);
    throw new ApiError(0, 'unreachable', 'the daemon does not answer');
  }
  if (res.status === 401) {
    setConnection('unauth');
    throw new ApiError(401, 'unauthenticated', 'not signed in');
  }
  if (res.status >= 500 && res.status !== 500) setConnection('down', `HTTP ${res.status}`);
  else setConnection('ok');
  if (!res.ok) {
    let code = null;
    let message = `HTTP ${res.status}`;
    try {
      const err = (await res.json()).error;
      code = err.code;
      message = err.message;
    } catch (_) { /* not JSON */ }
    throw new ApiError(res.status, code, message);
  }
  return res;
}

// GET (or POST with `body`) a JSON endpoint.
export async function getJson(path, opts) {
  return (await request(path, opts)).json();
}

export async function post(path, body = {}) {
  const res = await request(path, { method: 'POST', body });
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

// GET a text endpoint (the log): its body and headers.
export async function getText(path, opts) {
  const res = await request(path, opts);
  return { text: await res.text(), headers: res.headers };
}

// Ends this browser's session (POST /v1/session/end clears its cookie) and shows the sign-in
// page; true when it ended. A sign-out the daemon did not take (unreachable, 503) is an error
// the caller shows, not a page that looks signed out while its cookie still works.
export async function signOut() {
  try {
    await request('/v1/session/end', { method: 'POST' });
  } catch (e) {
    if (e.status !== 401) return false;  // 401: no session any more
  }
  setConnection('unauth');
  return true;
}

// The link `gpuq dashboard` prints carries the token in the fragment (#token=T), which no
// browser sends to a server. Trade it for the HttpOnly cookie, then drop it from the address bar.
export async function startSession() {
  const m = /(?:^#|&)token=([0-9a-fA-F]+)/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, '', location.pathname + location.search + '#/');
  try {
    await request('/v1/session', { method: 'POST', headers: { Authorization: `Bearer ${m[1]}` } });
  } catch (_) { /* the state says why */ }
}
