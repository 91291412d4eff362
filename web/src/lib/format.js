// SPDX-License-Identifier: Apache-2.0
// Formatting shared by the pages: durations, times, memory, outcomes as CSS classes.

export function dur(ms) {
  if (ms == null || !isFinite(ms)) return '—';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}

export function hours(h) {
  if (h == null) return '—';
  return h >= 100 ? h.toFixed(0) : h >= 10 ? h.toFixed(1) : h.toFixed(2);
}

export function pct(x) {
  if (x == null) return '—';
  const p = x * 100;
  return p > 0 && p < 10 ? `${p.toFixed(1)}%` : `${Math.round(p)}%`;
}

export function time(ms) {
  if (ms == null) return '—';
  const d = new Date(ms);
  const now = new Date();
  const sameDay = d.toDateString() === now.toDateString();
  const hm = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return sameDay ? hm : `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${hm}`;
}

export function ago(ms, now = Date.now()) {
  return ms == null ? '—' : `${dur(now - ms)} ago`;
}

export function mib(m) {
  if (m == null) return '—';
  return m >= 1024 ? `${(m / 1024).toFixed(1)} GiB` : `${m} MiB`;
}

export function bytes(n) {
  if (n == null) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function jobLabel(job) {
  if (!job) return '';
  return job.name || (job.fleet_id ? `fleet:${job.fleet_id}` : `job ${job.id}`);
}

export function priorityName(p) {
  return p === 10 ? 'high' : p === 50 ? 'normal' : p === 90 ? 'low' : `priority ${p}`;
}

// A job's latest run, or null.
export function lastRun(job) {
  return job && job.runs && job.runs.length ? job.runs[job.runs.length - 1] : null;
}

export function runGpus(run) {
  return run && run.gpus ? run.gpus.map((g) => (typeof g === 'number' ? `gpu${g}` : g)).join(' ') : '';
}

// Milliseconds from an RFC 3339 string (or a number), else null.
export function ms(t) {
  if (t == null) return null;
  if (typeof t === 'number') return t;
  const v = Date.parse(t);
  return isNaN(v) ? null : v;
}
