// SPDX-License-Identifier: Apache-2.0
// A Gantt chart of GPU occupancy, drawn as SVG: one lane per GPU, each run a bar coloured by
// its outcome (running ones reach "now"), predicted starts (ETAs) in lanes of their own, and
// shading where GPUs sat idle while jobs waited. Hover shows the job; a click opens it.
import { html, useState, useEffect, useRef, useCallback } from '../lib/html.js';
import { useRefresh } from '../lib/live.js';
import { timeline } from '../lib/timeline_data.js';
import { dur, time } from '../lib/format.js';

const WINDOWS = [['5m', 300e3], ['15m', 900e3], ['1h', 3600e3], ['6h', 6 * 3600e3], ['24h', 24 * 3600e3], ['3d', 3 * 86400e3],
  ['7d', 7 * 86400e3], ['30d', 30 * 86400e3], ['90d', 90 * 86400e3]];
const LANE = 26;
const LABEL = 64;
const AXIS = 22;

function ticks(from, to, width) {
  const span = to - from;
  const steps = [60e3, 300e3, 900e3, 3600e3, 3 * 3600e3, 6 * 3600e3, 12 * 3600e3, 86400e3, 7 * 86400e3];
  const step = steps.find((s) => span / s <= Math.max(2, width / 90)) || 30 * 86400e3;
  const out = [];
  const tz = new Date().getTimezoneOffset() * 60e3;
  for (let t = Math.ceil((from - tz) / step) * step + tz; t <= to; t += step) out.push(t);
  return { out, step };
}

function label(t, step) {
  const d = new Date(t);
  if (step >= 86400e3) return d.toLocaleDateString([], { month: 'short', day: 'numeric' });
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

// Predicted jobs stacked into as few rows as keep them apart.
function stack(items) {
  const rows = [];
  for (const p of items.slice().sort((a, b) => a.start_ms - b.start_ms)) {
    let row = rows.findIndex((r) => r <= p.start_ms);
    if (row < 0) { rows.push(0); row = rows.length - 1; }
    rows[row] = p.end_ms ?? Infinity;
    p.row = row;
  }
  return rows.length;
}

function Chart({ data, width, onHover }) {
  const from = data.from_ms;
  const to = data.to_ms;
  const now = data.now_ms || Date.now();
  const w = Math.max(100, width - LABEL);
  const x = (t) => LABEL + Math.max(0, Math.min(w, ((t - from) / (to - from)) * w));
  const gpus = data.gpus && data.gpus.length ? data.gpus : [...new Set(data.runs.flatMap((r) => r.gpus))];
  const lane = new Map(gpus.map((g, i) => [g, i]));
  const predicted = (data.predicted || []).map((p) => ({ ...p }));
  const prows = stack(predicted);
  const height = AXIS + (gpus.length + prows) * LANE + 4;
  const { out: tickList, step } = ticks(from, to, w);
  const bars = [];
  for (const r of data.runs) {
    const x0 = x(r.start_ms);
    const x1 = Math.max(x0 + 2, x(r.end_ms ?? now));
    for (const name of r.gpus) {
      const g = typeof name === 'number' ? (lane.has(`gpu${name}`) ? `gpu${name}` : gpus[name]) : name;
      if (!lane.has(g)) continue;
      bars.push(html`<a href=${`#/job/${r.job}`}><rect class=${`run o-${r.outcome}`} x=${x0} y=${AXIS + lane.get(g) * LANE + 3}
        width=${x1 - x0} height=${LANE - 6} rx="2" data-job=${r.job}
        onMouseMove=${(e) => onHover(e, r)} onMouseLeave=${() => onHover(null)}><title>${`job ${r.job} ${r.name || ''}`}</title></rect></a>`);
    }
  }
  return html`<svg class="gantt" width=${width} height=${height} viewBox=${`0 0 ${width} ${height}`} role="img" aria-label="GPU occupancy">
    ${(data.idle_while_waiting || []).map((s) => html`<rect class="idle-wait" x=${x(s.from_ms)} y=${AXIS}
      width=${Math.max(1, x(s.to_ms) - x(s.from_ms))} height=${gpus.length * LANE}
      onMouseMove=${(e) => onHover(e, { idle: s })} onMouseLeave=${() => onHover(null)} />`)}
    ${gpus.map((g, i) => html`<g><rect class=${`lane ${i % 2 ? 'odd' : ''}`} x=${LABEL} y=${AXIS + i * LANE} width=${w} height=${LANE} />
      <text class="lane-label" x="4" y=${AXIS + i * LANE + 17}>${g}</text></g>`)}
    ${prows > 0 && html`<text class="lane-label" x="4" y=${AXIS + gpus.length * LANE + 17}>next</text>`}
    ${tickList.map((t) => html`<g><line class="tick" x1=${x(t)} x2=${x(t)} y1=${AXIS - 4} y2=${height} />
      <text class="tick-label" x=${x(t) + 3} y="14">${label(t, step)}</text></g>`)}
    ${bars}
    ${predicted.map((p) => html`<a href=${`#/job/${p.job}`}><rect class="predicted" x=${x(p.start_ms)} y=${AXIS + (gpus.length + p.row) * LANE + 3}
      width=${Math.max(2, x(p.end_ms ?? to) - x(p.start_ms))} height=${LANE - 6} rx="2"
      onMouseMove=${(e) => onHover(e, { ...p, predicted: true })} onMouseLeave=${() => onHover(null)} /></a>`)}
    ${now >= from && now <= to && html`<line class="now" x1=${x(now)} x2=${x(now)} y1=${AXIS - 6} y2=${height} />`}
  </svg>`;
}

function tipText(r) {
  if (r.idle) return `${r.idle.free_gpus} GPU(s) idle while jobs waited, ${dur(r.idle.to_ms - r.idle.from_ms)}`;
  if (r.predicted) return `job ${r.job} ${r.name || ''}: predicted start ${time(r.start_ms)}, ${r.gpus_requested} GPU(s)`;
  const end = r.end_ms ?? Date.now();
  return `job ${r.job} ${r.name || ''}${r.user ? ` (${r.user})` : ''} · run ${r.run} · ${r.outcome} · ${time(r.start_ms)} for ${dur(end - r.start_ms)} · ${r.gpus.join(' ')}`;
}

export function TimelinePage({ params }) {
  const [span, setSpan] = useState(params.window || '6h');
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [width, setWidth] = useState(800);
  const [tip, setTip] = useState(null);
  const box = useRef(null);
  const spanMs = (WINDOWS.find(([k]) => k === span) || WINDOWS[1])[1];
  const load = useCallback(async () => {
    const to = Date.now();
    try { setData(await timeline(to - spanMs, to + spanMs / 6)); setError(null); } catch (e) { setError(e.message); }
  }, [spanMs]);
  useRefresh(load, [spanMs], { ms: 1000 });
  useEffect(() => {
    const ro = new ResizeObserver(() => box.current && setWidth(box.current.clientWidth - 16));
    if (box.current) { ro.observe(box.current); setWidth(box.current.clientWidth - 16); }
    return () => ro.disconnect();
  }, []);
  const onHover = (e, r) => {
    if (!e || !r) { setTip(null); return; }
    const rect = box.current.getBoundingClientRect();
    setTip({ x: e.clientX - rect.left, y: e.clientY - rect.top, text: tipText(r) });
  };
  const finished = data ? data.runs.filter((r) => r.end_ms != null).length : 0;
  return html`<div class="timeline-page">
    <div class="title-row"><h1>Timeline</h1>
      <div class="seg" role="group" aria-label="window">${WINDOWS.map(([k]) => html`<button
        class=${k === span ? 'on' : ''} aria-pressed=${k === span} onClick=${() => setSpan(k)}>${k}</button>`)}</div></div>
    ${error && html`<p class="error">${error}</p>`}
    <div class="gantt-box card" ref=${box}>
      ${data ? html`<${Chart} data=${data} width=${width} onHover=${onHover} />` : html`<p class="muted">Loading…</p>`}
      ${tip && html`<div class="tip" style=${{ left: `${Math.min(tip.x + 12, width - 260)}px`, top: `${tip.y + 14}px` }}>${tip.text}</div>`}
    </div>
    ${data && html`<p class="legend">
      ${['succeeded', 'failed', 'timed-out', 'cancelled', 'preempted', 'lost', 'not-started', 'running'].map((o) => html`<span class=${`key o-${o}`}>${o}</span>`)}
      <span class="key predicted">predicted</span><span class="key idle-wait">idle while jobs waited</span>
      <span class="muted small">${data.runs.length} runs (${finished} finished) in the window${data.fallback ? ' · from /v1/status (this daemon has no /v1/timeline)' : ''}</span></p>`}
  </div>`;
}
