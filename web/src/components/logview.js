// SPDX-License-Identifier: Apache-2.0
// A run's log: the last N lines, follow (a poll from the last byte read while it grows),
// search (highlights and filters the lines shown), and download (the whole log).
import { html, useState, useEffect, useRef, useMemo } from '../lib/html.js';
import { getText } from '../lib/api.js';
import { bytes } from '../lib/format.js';

const TAIL_BYTES = 256 * 1024;

export function LogView({ jobId, run, running }) {
  const [text, setText] = useState('');
  const [size, setSize] = useState(null);
  const [lines, setLines] = useState(500);
  const [follow, setFollow] = useState(true);
  const [query, setQuery] = useState('');
  const [err, setErr] = useState(null);
  const pos = useRef(0);
  const pre = useRef(null);
  const base = `/v1/jobs/${encodeURIComponent(jobId)}/log?run=${run}`;

  useEffect(() => {
    let stop = false;
    let timer = null;
    pos.current = 0;
    setText('');
    const read = async (first) => {
      try {
        if (first) {
          const head = await getText(`${base}&offset=0&limit=0`);
          const total = Number(head.headers.get('X-Gpuq-Log-Size') || 0);
          pos.current = Math.max(0, total - TAIL_BYTES);
        }
        const r = await getText(`${base}&offset=${pos.current}&limit=${4 * 1024 * 1024}`);
        if (stop) return;
        let chunk = r.text;
        if (first && pos.current > 0) chunk = chunk.slice(chunk.indexOf('\n') + 1);  // a partial line
        pos.current += new TextEncoder().encode(r.text).length;
        setSize(Number(r.headers.get('X-Gpuq-Log-Size') || pos.current));
        if (chunk) setText((t) => (first ? chunk : t + chunk).slice(-TAIL_BYTES * 2));
        setErr(null);
      } catch (e) { if (!stop) setErr(e.message); }
    };
    const loop = async (first) => {
      await read(first);
      if (!stop && follow && running) timer = setTimeout(() => loop(false), 1000);
    };
    loop(true);
    return () => { stop = true; clearTimeout(timer); };
  }, [jobId, run, follow, running]);

  const shown = useMemo(() => {
    let all = text.split('\n');
    if (all.length && all[all.length - 1] === '') all.pop();
    if (query) all = all.filter((l) => l.toLowerCase().includes(query.toLowerCase()));
    return all.slice(-lines);
  }, [text, lines, query]);

  useEffect(() => {
    if (follow && pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [shown, follow]);

  const mark = (line) => {
    if (!query) return line;
    const i = line.toLowerCase().indexOf(query.toLowerCase());
    return [line.slice(0, i), html`<mark>${line.slice(i, i + query.length)}</mark>`, line.slice(i + query.length)];
  };
  return html`<div class="log">
    <div class="log-bar">
      <label>last <select value=${lines} onChange=${(e) => setLines(Number(e.target.value))}>
        ${[100, 500, 2000, 10000].map((n) => html`<option value=${n}>${n}</option>`)}</select> lines</label>
      <label><input type="checkbox" checked=${follow} onChange=${(e) => setFollow(e.target.checked)} /> follow</label>
      <input type="search" placeholder="search" value=${query} onInput=${(e) => setQuery(e.target.value)} aria-label="search the log" />
      <a href=${`${base}&offset=0&limit=16777216`} download=${`job-${jobId}-run-${run}.log`}>download</a>
      <span class="muted small">${size != null ? bytes(size) : ''}${query ? ` · ${shown.length} matching` : ''}</span>
    </div>
    ${err && html`<p class="error">${err}</p>`}
    <pre class="log-text" ref=${pre} data-lines=${shown.length}>${shown.map((l) => html`<span class="line">${mark(l)}${"\n"}</span>`)}</pre>
  </div>`;
}
