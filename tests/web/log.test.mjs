// SPDX-License-Identifier: Apache-2.0
// The job page's log tail grows while the job prints (follow), search filters it, and the
// download link serves the whole log.
import { run, newPage, check, waitFor } from './harness.mjs';

await run('the log tail grows while a job prints', async (d, browser) => {
  // The job prints one line each time a file it waits for appears, so the test decides when.
  const id = d.submit('i=0; while [ $i -lt 1000 ]; do i=$((i+1)); echo "line $i"; while [ ! -e go.$i ]; do sleep 0.05; done; done',
    ['--gpus', '1', '--name', 'printer', '--cwd', d.home]);
  const page = await newPage(browser);
  await page.goto(d.link());
  await page.goto(`${d.origin}/#/job/${id}`);
  const log = page.locator('pre.log-text');
  await log.locator('.line', { hasText: 'line 1' }).first().waitFor();
  const { writeFileSync } = await import('node:fs');
  for (let i = 1; i <= 5; i++) {
    writeFileSync(`${d.home}/go.${i}`, '');
    await log.locator('.line', { hasText: `line ${i + 1}` }).first().waitFor();
  }
  const lines = await log.locator('.line').count();
  check(lines === 6, `six lines shown (${lines})`);
  // Search keeps the matching lines.
  await page.getByRole('searchbox', { name: 'search the log' }).fill('line 4');
  await waitFor(async () => (await log.locator('.line').count()) === 1, 'one matching line');
  check((await log.locator('mark').innerText()) === 'line 4', 'the match is highlighted');
  const href = await page.locator('.log-bar a', { hasText: 'download' }).getAttribute('href');
  const body = await page.evaluate(async (u) => (await fetch(u)).text(), href);
  check(body.startsWith('line 1\nline 2\n'), `download has the log: ${JSON.stringify(body.slice(0, 40))}`);
  check(page.problems.length === 0, page.problems.join('\n'));
  d.gpuq(['cancel', String(id)]);
});
