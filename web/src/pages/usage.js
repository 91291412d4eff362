// SPDX-License-Identifier: Apache-2.0
// Where the GPU-hours went over a window (GET /v1/report): by user, job name, outcome or GPU,
// as a share of the machine; queue-wait p50/p90/max by user and by GPUs asked; GPU-hours held
// but idle, lost to failed or preempted runs, and idle while jobs waited. CSV and JSON export.
import { html, useState, useCallback } from '../lib/html.js';
import { getJson } from '../lib/api.js';
import { useRefresh } from '../lib/live.js';
import { BarChart } from '../components/barchart.js';
import { dur, hours, pct, time } from '../lib/format.js';

const SINCE = ['24h', '7d', '30d', '90d'];
const BY = ['user', 'name', 'outcome', 'gpu'];

function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// A text a spreadsheet would take for a formula (= + - @, a tab or a CR first) gets a ' first.
const csvText = (v) => (typeof v === 'string' && /^[=+\-@\t\r]/.test(v) ? `'${v}` : String(v ?? ''));
const csvCell = (v) => { const t = csvText(v); return /[",\r\n]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t; };

export function toCsv(report) {
  const rows = [[report.by, 'gpu_hours', 'share', 'runs', 'jobs']];
  for (const g of report.groups || []) rows.push([g.key, g.gpu_hours, g.share, g.runs, g.jobs]);
  return rows.map((r) => r.map(csvCell).join(',')).join('\n') + '\n';
}

function WaitTable({ title, rows, keyName, keyOf }) {
  if (!rows || !rows.length) return null;
  return html`<div><h3>${title}</h3><div class="table-wrap"><table class="num">
    <thead><tr><th>${keyName}</th><th>p50</th><th>p90</th><th>max</th><th>jobs</th></tr></thead>
    <tbody>${rows.map((r) => html`<tr><td>${keyOf(r)}</td><td>${dur(r.p50_s * 1000)}</td><td>${dur(r.p90_s * 1000)}</td>
      <td>${dur(r.max_s * 1000)}</td><td>${r.jobs}</td></tr>`)}</tbody></table></div></div>`;
}

export function UsagePage({ params }) {
  const [since, setSince] = useState(params.since || '7d');
  const [by, setBy] = useState(params.by || 'user');
  const [report, setReport] = useState(null);
  const [error, setError] = useState(null);
  const load = useCallback(async () => {
    try {
      setReport(await getJson(`/v1/report?since=${since}&by=${by}`));
      setError(null);
    } catch (e) {
      setError(e.status === 404 ? 'This daemon has no /v1/report (it is older than the dashboard).' : e.message);
    }
  }, [since, by]);
  useRefresh(load, [since, by], { ms: 3000, filter: (e) => /^job\.(succeeded|failed|cancelled|preempted|started)$/.test(e.kind) });
  const seg = (list, value, set, label) => html`<div class="seg" role="group" aria-label=${label}>${list.map((k) => html`<button
    class=${k === value ? 'on' : ''} aria-pressed=${k === value} onClick=${() => set(k)}>${k}</button>`)}</div>`;
  const r = report;
  const groups = (r && r.groups) || [];
  const lost = (r && r.lost_gpu_hours) || {};
  const used = groups.reduce((a, g) => a + (g.gpu_hours || 0), 0);
  return html`<div class="usage-page">
    <div class="title-row"><h1>Usage</h1>${seg(SINCE, since, setSince, 'since')}${seg(BY, by, setBy, 'by')}
      ${r && html`<span class="actions"><button onClick=${() => download(`gpuq-report-${by}-${since}.csv`, 'text/csv', toCsv(r))}>CSV</button>
        <button onClick=${() => download(`gpuq-report-${by}-${since}.json`, 'application/json', JSON.stringify(r, null, 2))}>JSON</button></span>`}</div>
    ${error && html`<p class="error">${error}</p>`}
    ${r && html`
      <p class="muted small">${time(r.since_ms)} → ${time(r.until_ms)} · ${r.gpus} GPUs</p>
      <div class="figures">
        <div class="figure"><b>${hours(used)}</b><span>GPU-hours used</span><small>${pct(r.machine_gpu_hours ? used / r.machine_gpu_hours : null)} of ${hours(r.machine_gpu_hours)}</small></div>
        <div class="figure"><b>${hours(r.idle_held_gpu_hours)}</b><span>held but idle</span><small>from utilisation samples</small></div>
        <div class="figure"><b>${hours(Object.values(lost).reduce((a, b) => a + (b || 0), 0))}</b><span>lost</span>
          <small>${Object.entries(lost).filter(([, v]) => v).map(([k, v]) => `${k} ${hours(v)}`).join(' · ') || 'none'}</small></div>
        <div class="figure"><b>${hours(r.idle_while_waiting_gpu_hours)}</b><span>idle while jobs waited</span><small>GPU-hours</small></div>
      </div>
      <section class="card"><h2>GPU-hours by ${by}</h2>
        ${groups.length ? html`<${BarChart} labels=${groups.map((g) => String(g.key))} values=${groups.map((g) => g.gpu_hours)} />
          <div class="table-wrap"><table class="num groups">
            <thead><tr><th>${by}</th><th>GPU-hours</th><th>share</th><th></th><th>runs</th><th>jobs</th></tr></thead>
            <tbody>${groups.map((g) => html`<tr><td>${g.key}</td><td>${hours(g.gpu_hours)}</td><td>${pct(g.share)}</td>
              <td class="sharebar"><span class="bar"><span class="fill" style=${{ width: `${Math.min(100, (g.share || 0) * 100).toFixed(1)}%` }}></span></span></td>
              <td>${g.runs}</td><td>${g.jobs}</td></tr>`)}</tbody></table></div>`
          : html`<p class="muted">No run in this window.</p>`}
      </section>
      <section class="card"><h2>Queue wait</h2><div class="two">
        <${WaitTable} title="by user" rows=${r.wait && r.wait.by_user} keyName="user" keyOf=${(x) => x.key} />
        <${WaitTable} title="by GPUs asked" rows=${r.wait && r.wait.by_gpus} keyName="GPUs" keyOf=${(x) => x.gpus} />
      </div></section>`}
    ${!r && !error && html`<p class="muted">Loading…</p>`}
  </div>`;
}
