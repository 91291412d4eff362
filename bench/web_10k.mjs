// SPDX-License-Identifier: Apache-2.0
// The dashboard with 10,000 pending jobs: seeds them into a drained daemon (fake:4, one plan,
// so nothing starts), then measures in a headless chromium the page weight (raw and gzip),
// the API answers the queue page asks for (bytes, ms), the time to the first pending row and
// to first contentful paint, and the time to show the next page of pending jobs and to apply a
// move. Prints a table and one JSON line.
//   node bench/web_10k.mjs [--jobs 10000]     (GPUQ_BUILD_DIR: the build, default build/)
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, launch, newPage, waitFor, BUILD } from '../tests/web/harness.mjs';

const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
const N = Number(arg('--jobs', 10000));

function unix(d, method, path, body) {
  return new Promise((resolve, reject) => {
    const data = body ? Buffer.from(JSON.stringify(body)) : null;
    const t0 = performance.now();
    const req = http.request({ socketPath: join(d.home, 'gpuq.sock'), path, method,
      headers: { host: 'gpuq', ...(data ? { 'content-type': 'application/json', 'content-length': data.length } : {}) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, bytes: Buffer.concat(chunks).length, ms: performance.now() - t0,
        body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

const d = new Daemon();
let browser = null;
const result = { jobs: N };
try {
  await d.start();
  d.gpuq(['drain']);
  const t0 = performance.now();
  for (let from = 0; from < N; from += 2000) {
    const jobs = [];
    for (let i = from; i < Math.min(N, from + 2000); i++) {
      jobs.push({ name: `bench-${i}`, gpus: 1 + (i % 4 === 0), priority: i % 10 === 0 ? 'high' : i % 7 === 0 ? 'low' : 'normal',
        cwd: '/tmp', argv: ['true'] });
    }
    const r = await unix(d, 'POST', '/v1/plans', { jobs });
    if (r.status !== 200) throw new Error(`plan: ${r.status} ${r.body.slice(0, 300)}`);
  }
  result.seed_s = +((performance.now() - t0) / 1000).toFixed(1);

  // Page weight.
  const dist = join(BUILD, 'web/dist');
  result.assets = {};
  let raw = 0;
  let gz = 0;
  for (const f of readdirSync(dist)) {
    const b = readFileSync(join(dist, f));
    const z = gzipSync(b, { level: 9 }).length;
    result.assets[f] = { raw: b.length, gzip: z };
    raw += b.length;
    gz += z;
  }
  result.page_weight = { raw, gzip: gz };

  // The API answers.
  const measure = async (path) => {
    await unix(d, 'GET', path);  // warm
    const r = await unix(d, 'GET', path);
    return { status: r.status, bytes: r.bytes, gzip: gzipSync(Buffer.from(r.body)).length, ms: +r.ms.toFixed(1) };
  };
  result.api = {
    'status?finished=10&pending_limit=100&pending_offset=0 (the queue page)': await measure('/v1/status?finished=10&pending_limit=100&pending_offset=0'),
    'status?finished=10&pending_limit=100&pending_offset=9900': await measure('/v1/status?finished=10&pending_limit=100&pending_offset=9900'),
    'status?active=1 (everything)': await measure('/v1/status?active=1'),
    'events?limit=1 (the stream cursor)': await measure('/v1/events?after=9007199254740991&limit=1'),
  };
  const first = JSON.parse((await unix(d, 'GET', '/v1/status?finished=10&pending_limit=100&pending_offset=0')).body);
  result.daemon_pages = first.pending_total != null;

  // In the browser.
  browser = await launch();
  const page = await newPage(browser, { width: 1280, height: 900 });
  await page.goto(d.link());  // sign in first (the cookie), then measure a fresh load
  await page.goto('about:blank');
  // Times measured inside the page (performance.now(): from the navigation's start).
  await page.addInitScript(() => {
    const obs = new MutationObserver(() => {
      if (document.querySelector('.pending-row')) { window.firstRowMs = performance.now(); obs.disconnect(); }
    });
    document.addEventListener('DOMContentLoaded', () => obs.observe(document.body, { childList: true, subtree: true }));
  });
  await page.goto(`${d.origin}/#/`);
  await page.locator('.pending-row').first().waitFor({ timeout: 120000 });
  result.first_row_ms = Math.round(await page.evaluate(() => window.firstRowMs));
  result.fcp_ms = await page.evaluate(() => Math.round((performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || -1));
  result.rows_in_dom = await page.locator('.pending-row').count();
  result.dom_nodes = await page.evaluate(() => document.getElementsByTagName('*').length);
  result.js_heap_mib = await page.evaluate(() => (performance.memory ? +(performance.memory.usedJSHeapSize / 1048576).toFixed(1) : null));
  // Until the first row on the page is `want` (or any other row than the first now).
  const until = (action, want) => page.evaluate(({ action, want }) => new Promise((resolve) => {
    const first = document.querySelector('.pending-row').dataset.id;
    const t0 = performance.now();
    const done = () => {
      const r = document.querySelector('.pending-row');
      if (r && (want ? r.dataset.id === want : r.dataset.id !== first)) { obs.disconnect(); resolve(Math.round(performance.now() - t0)); }
    };
    const obs = new MutationObserver(done);
    obs.observe(document.body, { childList: true, subtree: true, attributes: true });
    const pager = (label) => [...document.querySelectorAll('.pager button')].find((b) => b.textContent.includes(label));
    if (action === 'move') document.querySelectorAll('.pending-row')[5].querySelector('button[aria-label="move to top"]').click();
    else pager(action).click();
  }), { action, want });
  result.next_page_ms = await until('next', null);
  result.first_page_ms = await until('first', null);
  const sixth = await page.locator('.pending-row').nth(5).getAttribute('data-id');
  result.move_ms = await until('move', sixth);
  result.page_problems = page.problems;
} finally {
  if (browser) await browser.close();
  await d.stop();
}

console.log(`pending jobs: ${N} (seeded in ${result.seed_s}s); the daemon pages them: ${result.daemon_pages}`);
console.log(`page weight: ${result.page_weight.raw} B raw, ${result.page_weight.gzip} B gzip`);
for (const [k, v] of Object.entries(result.assets)) console.log(`  ${k}: ${v.raw} B raw, ${v.gzip} B gzip`);
for (const [k, v] of Object.entries(result.api)) console.log(`GET /v1/${k}: ${v.bytes} B (${v.gzip} B gzip), ${v.ms} ms`);
console.log(`first pending row: ${result.first_row_ms} ms after navigation; first contentful paint ${result.fcp_ms} ms`);
console.log(`rows in the DOM: ${result.rows_in_dom}; DOM elements: ${result.dom_nodes}; JS heap: ${result.js_heap_mib} MiB`);
console.log(`next page shown: ${result.next_page_ms} ms; back to the first: ${result.first_page_ms} ms; a move to the top shown: ${result.move_ms} ms`);
console.log(JSON.stringify(result));
