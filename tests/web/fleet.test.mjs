// SPDX-License-Identifier: Apache-2.0
// The fleet page: a daemon in no fleet (GET /v1/fleet answers 404) says so; a fleet's answer
// (stubbed here in the browser with the shape of docs/api.md, since a real fleet needs a
// bucket: tests/fleet covers /v1/fleet itself) shows its nodes, heartbeats and class queues.
import { run, newPage, check } from './harness.mjs';

const FLEET = {
  url: 's3://bucket/fleet', node: 'box1', as_of_ms: Date.now() - 2000, error: null, refresh_ms: 5000,
  nodes: [
    { name: 'box1', stale: false, heartbeat_age_s: 3, gpus: 8, free_gpus: 1, classes: ['any', 'a100'], running: ['f1'], draining: false, version: '0.1.0' },
    { name: 'box2', stale: true, heartbeat_age_s: 400, gpus: 4, free_gpus: 0, classes: ['any'], running: [], draining: true, version: '0.1.0' },
  ],
  jobs: [
    { id: 'f1', name: 'train', state: 'running', class: 'a100', node: 'box1', runs: 1, exit_code: null, attempt: 1, queue: 'class a100', priority: 50, submitted_ms: 1, ended_ms: null, cancel_requested: false, reason: null },
    { id: 'f2', name: 'prep-1', state: 'queued', class: null, node: 'box2', runs: 0, exit_code: null, attempt: 1, queue: 'node box2', priority: 50, submitted_ms: 2, ended_ms: null, cancel_requested: false, reason: 'pinned to box2' },
  ],
};

await run('the fleet page: no fleet, then a fleet with nodes and queues', async (d, browser) => {
  const page = await newPage(browser);
  await page.goto(d.link());
  await page.goto(`${d.origin}/#/fleet`);
  await page.locator('.fleet-page', { hasText: 'no sign of a fleet' }).waitFor();
  await page.route('**/v1/fleet', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(FLEET) }));
  await page.reload();
  const stale = page.locator('.fleet-page tr', { hasText: 'box2' });
  await stale.waitFor();
  check((await stale.innerText()).includes('stale') && (await stale.innerText()).includes('draining'), 'box2 stale and draining');
  check((await page.locator('.fleet-page tr', { hasText: 'box1' }).innerText()).includes('1/8'), 'box1 has 1 of 8 GPUs free');
  await page.locator('.fleet-page h3', { hasText: 'class a100' }).waitFor();
  await page.locator('.fleet-page h3', { hasText: 'node box2' }).waitFor();
  check(page.problems.length === 0, page.problems.join('\n'));
});
