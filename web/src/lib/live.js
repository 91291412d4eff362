// SPDX-License-Identifier: Apache-2.0
// Live updates: one EventSource on /v1/events/stream (cookie auth) for the whole page.
// Components subscribe with onEvent(fn) or useRefresh(load) (a debounced reload on any
// event). The stream starts after the newest event at load time; the browser resumes with
// Last-Event-ID after a drop, and when it gives up (a 401, the daemon gone for long) this
// module reconnects by itself with backoff and marks the connection down meanwhile.
import { useEffect, useRef, useState } from './html.js';
import { getJson } from './api.js';
import { setConnection, setShared } from './state.js';
import { EVENT_KINDS } from './kinds.js';

const listeners = new Set();
let source = null;
let lastSeq = 0;
let backoff = 1000;

function dispatch(msg) {
  let event;
  try { event = JSON.parse(msg.data); } catch (_) { return; }
  if (event.seq <= lastSeq) return;
  lastSeq = event.seq;
  setShared({ lastSeq });
  for (const fn of listeners) fn(event);
}

function connect() {
  source = new EventSource(`/v1/events/stream?after=${lastSeq}`);
  source.onmessage = dispatch;
  for (const kind of EVENT_KINDS) source.addEventListener(kind, dispatch);
  source.onopen = () => {
    backoff = 1000;
    setConnection('ok');
    for (const fn of listeners) fn({ kind: 'stream.open' });
  };
  source.onerror = () => {
    setConnection('down', 'the event stream dropped; reconnecting');
    if (source.readyState === EventSource.CLOSED) {
      // The browser gave up (an error answer, not a dropped connection): ask why before
      // trying again; a 401 shows the sign-in page (api.js) and ends the retries.
      source = null;
      setTimeout(() => {
        getJson('/v1/health').then(() => connect(), (e) => { if (e.status !== 401) retry(); });
      }, backoff);
      backoff = Math.min(backoff * 2, 30000);
    }
  };
}

function retry() {
  setTimeout(start, backoff);
  backoff = Math.min(backoff * 2, 30000);
}

// Starts the stream from the newest event (or resumes from the last one seen).
export async function start() {
  if (source) return;
  if (lastSeq === 0) {
    try {
      const r = await getJson('/v1/events?after=9007199254740991&limit=1');
      lastSeq = r.last_seq || 0;
      setShared({ lastSeq });
    } catch (e) {
      if (e.status !== 401) retry();
      return;
    }
  }
  connect();
}

// Closes the stream for good (the page signed out).
export function stop() {
  if (source) source.close();
  source = null;
}

export function onEvent(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// Calls load() now, then again (debounced by `ms`) after each event that `filter` accepts,
// and every `pollMs` as a safety net.
export function useRefresh(load, deps = [], { ms = 300, filter = null, pollMs = 30000 } = {}) {
  const ref = useRef(load);
  ref.current = load;
  useEffect(() => {
    let timer = null;
    const kick = () => {
      if (timer) return;
      timer = setTimeout(() => { timer = null; ref.current(); }, ms);
    };
    ref.current();
    const off = onEvent((e) => { if (!filter || filter(e)) kick(); });
    const poll = setInterval(kick, pollMs);
    return () => { off(); clearInterval(poll); if (timer) clearTimeout(timer); };
  }, deps);
}

// The time now, ticking each second while `active` (elapsed times of running things); a tick
// is skipped while `paused()` says so (a drag in progress).
export function useNow({ active = true, paused = null } = {}) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return undefined;
    setNow(Date.now());
    const t = setInterval(() => (paused && paused()) || setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [active]);
  return now;
}
