// SPDX-License-Identifier: Apache-2.0
// GPU-hours per group as a uPlot bar chart (x: the groups, y: GPU-hours).
import uPlot from 'uplot';
import { html, useEffect, useRef } from '../lib/html.js';

export function BarChart({ labels, values, height = 220 }) {
  const ref = useRef(null);
  useEffect(() => {
    const el = ref.current;
    if (!el || !labels.length) return undefined;
    const xs = labels.map((_, i) => i);
    const dark = matchMedia('(prefers-color-scheme: dark)').matches;
    const ink = dark ? '#c9d1d9' : '#333';
    const plot = new uPlot({
      width: Math.max(200, el.clientWidth), height,
      legend: { show: false }, cursor: { show: false },
      scales: { x: { time: false, range: [-0.6, labels.length - 0.4] }, y: { range: (u, min, max) => [0, Math.max(1e-3, max) * 1.1] } },
      axes: [
        { stroke: ink, grid: { show: false }, splits: () => xs, values: (u, v) => v.map((i) => (labels[i] ?? '').slice(0, 14)) },
        { stroke: ink, label: 'GPU-hours', grid: { stroke: dark ? '#333' : '#eee' } },
      ],
      series: [{}, { label: 'GPU-hours', fill: 'rgba(47,111,223,0.7)', stroke: '#2f6fdf', paths: uPlot.paths.bars({ size: [0.6, 80] }), points: { show: false } }],
    }, [xs, values], el);
    const ro = new ResizeObserver(() => plot.setSize({ width: Math.max(200, el.clientWidth), height }));
    ro.observe(el);
    return () => { ro.disconnect(); plot.destroy(); };
  }, [labels.join('\u0000'), values.join(','), height]);
  return html`<div class="barchart" ref=${ref}></div>`;
}
