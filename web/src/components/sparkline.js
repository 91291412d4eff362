// SPDX-License-Identifier: Apache-2.0
// A small uPlot chart: a run's utilisation samples ([[t_ms, util, mem_mib], ...]) or any
// series over time. Sized to its container; redrawn when the data changes.
import uPlot from 'uplot';
import { html, useEffect, useRef } from '../lib/html.js';

export function Sparkline({ samples, height = 48, label = 'utilisation %' }) {
  const ref = useRef(null);
  useEffect(() => {
    const el = ref.current;
    if (!el || !samples || samples.length < 2) return undefined;
    const xs = samples.map((s) => s[0] / 1000);
    const util = samples.map((s) => s[1]);
    const plot = new uPlot({
      width: Math.max(120, el.clientWidth || 240), height,
      legend: { show: false }, cursor: { show: true, points: { show: false } },
      axes: [{ show: false }, { show: false }],
      scales: { y: { range: [0, 100] } },
      series: [{}, { label, stroke: '#2f6fdf', fill: 'rgba(47,111,223,0.18)', width: 1.5 }],
    }, [xs, util], el);
    const ro = new ResizeObserver(() => plot.setSize({ width: Math.max(120, el.clientWidth), height }));
    ro.observe(el);
    return () => { ro.disconnect(); plot.destroy(); };
  }, [samples, height]);
  if (!samples || samples.length < 2) return html`<span class="muted">no samples</span>`;
  return html`<div class="spark" ref=${ref} aria-label=${label}></div>`;
}
