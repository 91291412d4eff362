// SPDX-License-Identifier: Apache-2.0
// The page-wide state that is not a page's data: the connection (ok, down, unauthenticated),
// what the daemon's health says about its listener, and the toasts. A tiny subscribe/notify
// store; components read it through useShared().
import { useState, useEffect } from './html.js';

const shared = { connection: 'ok', connectionWhy: '', toasts: [], allowSubmit: false, lastSeq: 0 };
const listeners = new Set();

function notify() {
  for (const fn of listeners) fn({ ...shared });
}

export function setShared(patch) {
  let changed = false;
  for (const [k, v] of Object.entries(patch)) {
    if (shared[k] !== v) { shared[k] = v; changed = true; }
  }
  if (changed) notify();
}

export function getShared() { return shared; }

export function setConnection(state, why = '') {
  // Unauthenticated sticks until a reload: only a new link can fix it.
  if (shared.connection === 'unauth' && state !== 'unauth') return;
  setShared({ connection: state, connectionWhy: why });
}

export function useShared() {
  const [s, set] = useState({ ...shared });
  useEffect(() => {
    listeners.add(set);
    set({ ...shared });  // a change between the first render and this effect
    return () => listeners.delete(set);
  }, []);
  return s;
}

let toastId = 0;
// A toast for `ms` milliseconds; `action` is an optional {label, run} button (Undo).
export function toast(text, { kind = 'info', action = null, ms = 8000 } = {}) {
  const id = ++toastId;
  setShared({ toasts: [...shared.toasts, { id, text, kind, action }] });
  setTimeout(() => dismissToast(id), ms);
  return id;
}

export function dismissToast(id) {
  setShared({ toasts: shared.toasts.filter((t) => t.id !== id) });
}
