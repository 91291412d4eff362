// SPDX-License-Identifier: Apache-2.0
// With --http-allow-submit the job page offers "resubmit with changes": the new job has the
// changed name and GPU count and runs the edited command. (Without the flag the page offers
// nothing: the pages test sees no such button.)
import { run, newPage, check, waitFor } from './harness.mjs';

await run('resubmit with changes over TCP when the daemon allows submits', async (d, browser) => {
  const id = d.submit('echo first', ['--gpus', '1', '--name', 'original']);
  d.gpuq(['wait', String(id)]);
  const page = await newPage(browser);
  await page.goto(d.link());
  await page.goto(`${d.origin}/#/job/${id}`);
  await page.getByRole('button', { name: 'Resubmit with changes…' }).click();
  const form = page.locator('form.resubmit');
  await form.getByLabel('name').fill('changed');
  await form.getByLabel('GPUs').fill('2');
  await form.locator('textarea').fill('echo second');
  await form.getByRole('button', { name: 'Submit' }).click();
  await page.locator('dialog.confirm[open]').getByRole('button', { name: 'Submit' }).click();
  await page.locator('.job-page h1', { hasText: 'changed' }).waitFor();
  const job = d.json(['show', 'changed']);
  check(job.gpus_requested === 2 && job.id !== id, `the new job: ${JSON.stringify(job)}`);
  await waitFor(() => d.json(['show', 'changed']).state === 'succeeded', 'the new job to succeed');
  await page.locator('pre.log-text .line', { hasText: 'second' }).waitFor();
  check(page.problems.length === 0, page.problems.join('\n'));
}, { allowSubmit: true });
