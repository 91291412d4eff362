// SPDX-License-Identifier: Apache-2.0
// When the daemon goes away the page says so in a banner, and when a daemon answers on the
// same address again the page reconnects by itself: the banner goes and new events arrive.
import { run, newPage, check } from './harness.mjs';

await run('a banner while the daemon is away; the page reconnects by itself', async (d, browser) => {
  const page = await newPage(browser);
  await page.goto(d.link());
  await page.locator('table.gpus').waitFor();
  await d.stopDaemon();
  await page.locator('.banner.down').waitFor();
  await d.start();
  await page.locator('.banner.down').waitFor({ state: 'detached', timeout: 60000 });
  // Live again: a submit shows up without a reload.
  const id = d.submit('sleep 600', ['--gpus', '1', '--name', 'after-restart']);
  await page.locator('table.gpus tr', { hasText: 'after-restart' }).waitFor({ timeout: 60000 });
  check(page.problems.length === 0, page.problems.join('\n'));
  d.gpuq(['cancel', String(id)]);
});
