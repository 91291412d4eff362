// SPDX-License-Identifier: Apache-2.0
// The timeline draws the finished runs on their GPUs' lanes, coloured by outcome, and the
// running one reaching now; hovering a run names its job.
import { run, newPage, check, waitFor } from './harness.mjs';

await run('the timeline shows finished runs', async (d, browser) => {
  const ok = d.submit('true', ['--gpus', '1', '--name', 'quick-ok']);
  const bad = d.submit('exit 3', ['--gpus', '2', '--name', 'quick-fail']);
  d.gpuq(['wait', String(ok), String(bad)], { ok: [0, 1] });
  const live = d.submit('sleep 600', ['--gpus', '1', '--name', 'still-running']);
  await waitFor(() => d.json(['show', String(live)]).state === 'running', 'a running job');
  const page = await newPage(browser);
  await page.goto(d.link());
  await page.goto(`${d.origin}/#/timeline`);
  await page.getByRole('button', { name: '1h', exact: true }).click();
  const svg = page.locator('svg.gantt');
  await svg.locator(`rect.run.o-succeeded[data-job="${ok}"]`).first().waitFor();
  check(await svg.locator(`rect.run.o-failed[data-job="${bad}"]`).count() === 2, 'the failed run on both its GPUs');
  await svg.locator(`rect.run.o-running[data-job="${live}"]`).first().waitFor();
  check(await svg.locator('text.lane-label', { hasText: 'gpu3' }).count() === 1, 'a lane per GPU');
  // A run of a second is a sliver in an hour, under its neighbours: point at it directly.
  const box = await svg.locator(`rect.run[data-job="${ok}"]`).first().boundingBox();
  await svg.locator(`rect.run[data-job="${ok}"]`).first().dispatchEvent('mousemove', { clientX: box.x, clientY: box.y + 2 });
  await page.locator('.tip', { hasText: 'quick-ok' }).waitFor();
  check(page.problems.length === 0, page.problems.join('\n'));
  d.gpuq(['cancel', String(live)]);
});
