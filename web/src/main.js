// SPDX-License-Identifier: Apache-2.0
// The dashboard's entry: signs in (the #token= link), starts the live event stream, and
// routes by hash: #/ queue, #/job/ID, #/timeline, #/usage, #/events, #/fleet.
import { html, render, useEffect, useState } from './lib/html.js';
import { startSession, getJson } from './lib/api.js';
import { loadMe } from './lib/me.js';
import { start as startLive } from './lib/live.js';
import { useShared, setShared } from './lib/state.js';
import { Nav, Banner, Toasts, Unauthenticated } from './components/chrome.js';
import { ConfirmHost } from './components/confirm.js';
import { QueuePage } from './pages/queue.js';
import { JobPage } from './pages/job.js';
import { TimelinePage } from './pages/timeline.js';
import { UsagePage } from './pages/usage.js';
import { EventsPage } from './pages/events.js';
import { FleetPage } from './pages/fleet.js';

function parseRoute() {
  const path = location.hash.replace(/^#/, '') || '/';
  const [route, query = ''] = path.split('?');
  const params = Object.fromEntries(new URLSearchParams(query));
  const job = /^\/job\/([^/]+)$/.exec(route);
  if (job) return { page: 'job', id: decodeURIComponent(job[1]), params };
  const name = route.replace(/^\//, '');
  if (['timeline', 'usage', 'events', 'fleet'].includes(name)) return { page: name, params };
  return { page: 'queue', params };
}

function App() {
  const [route, setRoute] = useState(parseRoute());
  const s = useShared();
  useEffect(() => {
    const on = () => setRoute(parseRoute());
    window.addEventListener('hashchange', on);
    on();  // a hash that changed between the first render and this effect
    return () => window.removeEventListener('hashchange', on);
  }, []);
  useEffect(() => { document.title = `gpuq · ${route.page}`; }, [route.page]);
  if (s.connection === 'unauth') return html`<${Unauthenticated} />`;
  let page;
  switch (route.page) {
    case 'job': page = html`<${JobPage} id=${route.id} key=${route.id} />`; break;
    case 'timeline': page = html`<${TimelinePage} params=${route.params} />`; break;
    case 'usage': page = html`<${UsagePage} params=${route.params} />`; break;
    case 'events': page = html`<${EventsPage} params=${route.params} key=${JSON.stringify(route.params)} />`; break;
    case 'fleet': page = html`<${FleetPage} />`; break;
    default: page = html`<${QueuePage} params=${route.params} />`;
  }
  return html`<${Nav} page=${route.page} /><${Banner} />
    <main class="page" data-page=${route.page}>${page}</main>
    <${Toasts} /><${ConfirmHost} />`;
}

async function boot() {
  await startSession();
  // Who the page acts as, before the first render: which buttons each job shows.
  await loadMe();
  // What the listener allows (resubmit needs --http-allow-submit); absent on the unix socket.
  getJson('/v1/health').then((h) => setShared({ allowSubmit: !!(h.http && h.http.allow_submit), health: h }))
    .catch(() => {});
  const root = document.getElementById('app');
  root.textContent = '';
  render(html`<${App} />`, root);
  startLive();
}

boot();
