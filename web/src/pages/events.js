// SPDX-License-Identifier: Apache-2.0
// The live event feed, newest first: the last 500 events, then each new one as the stream
// delivers it; filters by kind (a family or one kind) and by job; older pages on demand.
import { html, useState, useEffect, useMemo } from '../lib/html.js';
import { getJson } from '../lib/api.js';
import { onEvent } from '../lib/live.js';
import { time } from '../lib/format.js';

const KEEP = 5000;
const FAMILIES = ['job.', 'resource.', 'queue.', 'daemon.', 'node.', 'fleet.'];

export function EventsPage({ params }) {
  const [events, setEvents] = useState([]);
  const [oldest, setOldest] = useState(null);
  const [kind, setKind] = useState(params.kind || '');
  const [job, setJob] = useState(params.job || '');
  const [error, setError] = useState(null);

  const loadBefore = async (seq) => {
    const after = Math.max(0, seq - 501);
    const r = await getJson(`/v1/events?after=${after}&limit=${seq - 1 - after}`);
    setOldest(after);
    setEvents((old) => {
      const have = new Set(old.map((e) => e.seq));
      return old.concat(r.events.filter((e) => !have.has(e.seq)).reverse()).slice(0, KEEP);
    });
  };

  useEffect(() => {
    const off = onEvent((e) => {
      if (!e.seq) return;
      setEvents((old) => (old.length && old[0].seq >= e.seq ? old : [e, ...old].slice(0, KEEP)));
    });
    getJson('/v1/events?after=9007199254740991&limit=1')
      .then((p) => loadBefore((p.last_seq || 0) + 1))
      .catch((e) => setError(e.message));
    return off;
  }, []);

  const kinds = useMemo(() => [...new Set(events.map((e) => e.kind))].sort(), [events]);
  const shown = useMemo(() => events.filter((e) => {
    if (kind && !(kind.endsWith('.') ? e.kind.startsWith(kind) : e.kind === kind)) return false;
    if (job && String(e.job) !== job.trim()) return false;
    return true;
  }).slice(0, 1000), [events, kind, job]);

  return html`<div class="events-page">
    <div class="title-row"><h1>Events</h1>
      <label>kind <select value=${kind} onChange=${(e) => setKind(e.target.value)} aria-label="filter by kind">
        <option value="">all</option>
        ${FAMILIES.map((f) => html`<option value=${f}>${f}*</option>`)}
        ${kinds.map((k) => html`<option value=${k}>${k}</option>`)}
      </select></label>
      <label>job <input class="short" inputmode="numeric" value=${job} placeholder="id" onInput=${(e) => setJob(e.target.value)} aria-label="filter by job" /></label>
      <span class="muted small">${shown.length} shown of ${events.length} loaded</span>
    </div>
    ${error && html`<p class="error">${error}</p>`}
    <ul class="events">${shown.map((e) => html`<li key=${e.seq} data-seq=${e.seq}>
      <span class="seq muted">#${e.seq}</span>
      <span class="when muted">${time(e.time_ms)}</span>
      <span class=${`kind k-${e.kind.split('.')[0]}`}>${e.kind}</span>
      ${e.job != null ? html`<a href=${`#/job/${e.job}`}>job ${e.job}</a>` : ''}${e.run != null ? html` <span class="muted">run ${e.run}</span>` : ''}
      <code class="data">${e.data && Object.keys(e.data).length ? JSON.stringify(e.data) : ''}</code>
    </li>`)}</ul>
    ${oldest > 0 && html`<p><button onClick=${() => loadBefore(oldest + 1).catch((e) => setError(e.message))}>Older events</button></p>`}
  </div>`;
}
