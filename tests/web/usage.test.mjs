// SPDX-License-Identifier: Apache-2.0
// The usage page shows where the GPU-hours went (GET /v1/report): after runs finish, a row for
// the user who submitted them, with the daemon's figures, and a CSV export with the same groups.
import { userInfo } from 'node:os';
import { readFileSync } from 'node:fs';
import { run, newPage, check } from './harness.mjs';

await run('the usage page shows GPU-hours by user and exports CSV', async (d, browser) => {
  const a = d.submit('sleep 1', ['--gpus', '2', '--name', 'used-two']);
  const b = d.submit('exit 1', ['--gpus', '1', '--name', 'failed-one']);
  const f = d.submit('true', ['--gpus', '1', '--name', '=HYPERLINK("x")']);  // a spreadsheet formula
  d.gpuq(['wait', String(a), String(b), String(f)], { ok: [0, 1] });
  const report = await d.api('/v1/report?since=24h&by=user');
  const me = userInfo().username;
  const group = report.groups.find((g) => g.key === me);
  check(group && group.runs === 3, `the report has my runs: ${JSON.stringify(report.groups)}`);
  const page = await newPage(browser);
  await page.goto(d.link());
  await page.goto(`${d.origin}/#/usage?since=24h&by=user`);
  const row = page.locator('table.groups tbody tr', { hasText: me });
  await row.waitFor();
  check((await row.locator('td').nth(4).innerText()) === '3', 'three runs in my row');
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'CSV' }).click()]);
  const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
  check(csv[0] === 'user,gpu_hours,share,runs,jobs' && csv.some((l) => l.startsWith(`${me},`)), `CSV: ${csv.join(' | ')}`);
  // By name: the job named like a formula is exported as text (a ' first).
  await page.getByRole('button', { name: 'name', exact: true }).click();
  await page.locator('table.groups tbody tr', { hasText: 'used-two' }).waitFor();
  const [byName] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'CSV' }).click()]);
  const names = readFileSync(await byName.path(), 'utf8').trim().split('\n');
  check(names.some((l) => l.startsWith('"\'=HYPERLINK(""x"")",')), `a formula is text in the CSV: ${names.join(' | ')}`);
  check(!names.some((l) => l.startsWith('=') || l.startsWith('"=')), `no cell starts a formula: ${names.join(' | ')}`);
  await page.getByRole('button', { name: 'outcome', exact: true }).click();
  await page.locator('table.groups tbody tr', { hasText: 'failed' }).waitFor();
  check(page.problems.length === 0, page.problems.join('\n'));
});
