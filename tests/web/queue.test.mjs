// SPDX-License-Identifier: Apache-2.0
// The queue page shows the running jobs on their GPUs and the pending ones with their reasons,
// held jobs apart, and passes no CSP violation; it updates live when a job is submitted.
import { run, newPage, check } from './harness.mjs';

await run('queue page shows running and pending jobs with reasons', async (d, browser) => {
  const running = [];
  for (let i = 0; i < 4; i++) running.push(d.submit('sleep 600', ['--gpus', '1', '--name', `run-${i}`]));
  const big = d.submit('sleep 600', ['--gpus', '2', '--name', 'wants-two']);
  const held = d.submit('sleep 600', ['--gpus', '1', '--name', 'on-hold', '--hold']);
  const page = await newPage(browser);
  await page.goto(d.link());
  // Running: each GPU row names its job.
  for (let i = 0; i < 4; i++) {
    await page.locator('table.gpus tr', { hasText: `run-${i}` }).first().waitFor();
  }
  check(await page.locator('table.gpus .badge.busy').count() === 4, 'four busy GPUs');
  // Pending: the job with its reason, from the daemon.
  const job = d.json(['show', String(big)]);
  check(job.state === 'pending' && job.reason, `job ${big} pending with a reason`);
  const row = page.locator(`.pending-row[data-id="${big}"]`);
  await row.waitFor();
  const text = await row.innerText();
  check(text.includes('wants-two') && text.includes(job.reason), `pending row shows the reason: ${text}`);
  // Held: its own section.
  await page.locator(`li.row[data-id="${held}"]`, { hasText: 'held' }).waitFor();
  // Live: a new submit appears without a reload.
  const late = d.submit('sleep 600', ['--gpus', '1', '--name', 'late-comer']);
  await page.locator(`.pending-row[data-id="${late}"]`, { hasText: 'late-comer' }).waitFor();
  // The token left the address bar.
  check(!page.url().includes('token='), `the token is gone from the URL: ${page.url()}`);
  check(page.problems.length === 0, page.problems.join('\n'));
  d.gpuq(['cancel', ...running.map(String), String(big), String(held), String(late)]);
});
