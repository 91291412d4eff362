// SPDX-License-Identifier: Apache-2.0
// The frame around every page: the navigation (with, on a box's daemon, who the page acts
// as), the banner that says when the daemon does not
// answer (or the page is not signed in), and the toasts (with Undo).
import { html } from '../lib/html.js';
import { useShared, dismissToast, toast } from '../lib/state.js';
import { whoami } from '../lib/me.js';
import { signOut } from '../lib/api.js';
import { stop as stopLive } from '../lib/live.js';

const PAGES = [
  ['#/', 'Queue', 'queue'], ['#/timeline', 'Timeline', 'timeline'], ['#/usage', 'Usage', 'usage'],
  ['#/events', 'Events', 'events'], ['#/fleet', 'Fleet', 'fleet'],
];

export function Nav({ page }) {
  const me = whoami();
  return html`<header class="top">
    <a class="brand" href="#/">gpuq</a>
    <nav>${PAGES.map(([href, label, key]) => html`
      <a href=${href} class=${page === key ? 'active' : ''} aria-current=${page === key ? 'page' : null}>${label}</a>`)}
    </nav>
    ${me.system && me.user && html`<span class="whoami" title="the pages act with this user's rights"
      >${me.user}${me.admin ? ' (admin)' : ''}</span>`}
    <button class="signout" title="end this browser's session; the link gpuq dashboard prints signs in again"
      onClick=${async () => {
        if (await signOut()) stopLive();
        else toast('Not signed out: the daemon did not end the session; try again', { kind: 'error' });
      }}>Sign out</button>
  </header>`;
}

export function Banner() {
  const s = useShared();
  if (s.connection === 'down') {
    return html`<div class="banner down" role="alert">
      The daemon does not answer${s.connectionWhy ? ` (${s.connectionWhy})` : ''}. Reconnecting by itself…
    </div>`;
  }
  return null;
}

export function Toasts() {
  const s = useShared();
  return html`<div class="toasts" aria-live="polite">${s.toasts.map((t) => html`
    <div class=${`toast ${t.kind}`} key=${t.id}>
      <span>${t.text}</span>
      ${t.action && html`<button onClick=${() => { dismissToast(t.id); t.action.run(); }}>${t.action.label}</button>`}
      <button class="x" aria-label="dismiss" onClick=${() => dismissToast(t.id)}>×</button>
    </div>`)}
  </div>`;
}

export function Unauthenticated() {
  return html`<main class="page unauth">
    <h1>Not signed in</h1>
    <p>This dashboard needs the link that <code>gpuq dashboard</code> prints on the machine the
    daemon runs on: it carries a token once and trades it for a session of this browser's
    own, which ends when you sign out, a day after its last use or a week after it began.</p>
    <pre>gpuq dashboard</pre>
    <p>Open the link it prints (over an ssh tunnel, keep the same host and port).</p>
  </main>`;
}
