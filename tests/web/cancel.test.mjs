// SPDX-License-Identifier: Apache-2.0
// Cancel asks first: keeping the job in the dialog changes nothing; confirming cancels it in
// the daemon (a pending job from the queue page, a running one from its job page).
import { run, newPage, check, waitFor } from './harness.mjs';

await run('cancel asks, then cancels', async (d, browser) => {
  const busy = [];
  for (let i = 0; i < 4; i++) busy.push(d.submit('sleep 600', ['--gpus', '1', '--name', `busy-${i}`]));
  const waiting = d.submit('sleep 600', ['--gpus', '1', '--name', 'to-cancel']);
  const page = await newPage(browser);
  await page.goto(d.link());
  const row = page.locator(`.pending-row[data-id="${waiting}"]`);
  await row.getByRole('button', { name: 'Cancel' }).click();
  const dialog = page.locator('dialog.confirm[open]');
  await dialog.waitFor();
  check((await dialog.innerText()).includes('to-cancel'), 'the dialog names the job');
  await dialog.getByRole('button', { name: 'Keep' }).click();
  await dialog.waitFor({ state: 'detached' }).catch(() => {});
  await page.locator('dialog.confirm[open]').waitFor({ state: 'hidden' });
  check(d.json(['show', String(waiting)]).state === 'pending', 'Keep leaves it pending');
  // Confirm this time.
  await row.getByRole('button', { name: 'Cancel' }).click();
  await page.locator('dialog.confirm[open]').getByRole('button', { name: 'Cancel' }).click();
  await waitFor(() => d.json(['show', String(waiting)]).state === 'cancelled', 'the job cancelled in the daemon');
  await row.waitFor({ state: 'detached' });
  // A running job, from its page.
  await page.goto(`${d.origin}/#/job/${busy[0]}`);
  await page.locator('.job-page .badge.running').first().waitFor();
  await page.locator('.title-row').getByRole('button', { name: 'Cancel' }).click();
  await page.locator('dialog.confirm[open]').getByRole('button', { name: 'Cancel' }).click();
  await waitFor(() => d.json(['show', String(busy[0])]).state === 'cancelled', 'the running job cancelled');
  await page.locator('.title-row .badge.cancelled').waitFor();
  check(page.problems.length === 0, page.problems.join('\n'));
  d.gpuq(['cancel', ...busy.slice(1).map(String)]);
});
