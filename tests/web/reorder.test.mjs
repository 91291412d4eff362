// SPDX-License-Identifier: Apache-2.0
// Reordering pending jobs in the page changes the daemon's serving order: by drag and drop
// (SortableJS), by keyboard (Alt+ArrowUp on a focused row) and by the row's buttons, and the
// Undo toast puts a moved job back.
import { run, newPage, check, waitFor } from './harness.mjs';

// The daemon's serving order of the pending jobs: serving_position where the daemon sends it,
// else the reason's "behind N better jobs" (the number of jobs ahead).
async function servingOrder(d) {
  const s = await d.api('/v1/status?active=1');
  const pending = s.jobs.filter((j) => j.state === 'pending');
  const key = (j) => (j.serving_position != null ? j.serving_position : Number((/behind (\d+)/.exec(j.reason) || [0, 0])[1]));
  return pending.sort((a, b) => key(a) - key(b)).map((j) => j.id);
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

await run('drag and drop, keyboard and buttons change the serving order; undo restores it', async (d, browser) => {
  const busy = [];
  for (let i = 0; i < 4; i++) busy.push(d.submit('sleep 600', ['--gpus', '1', '--name', `busy-${i}`]));
  const [a, b, c] = ['first', 'second', 'third'].map((n) => d.submit('sleep 600', ['--gpus', '1', '--name', n]));
  await waitFor(async () => same(await servingOrder(d), [a, b, c]), 'the order a, b, c');
  const page = await newPage(browser);
  await page.goto(d.link());
  const row = (id) => page.locator(`.pending-row[data-id="${id}"]`);
  await row(c).waitFor();

  // Drag "third" by its handle above "first".
  const from = await row(c).locator('.handle').boundingBox();
  const to = await row(a).boundingBox();
  await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
  await page.mouse.down();
  for (let i = 1; i <= 12; i++) {
    await page.mouse.move(from.x + from.width / 2, from.y + (to.y + 4 - from.y) * (i / 12));
  }
  await page.mouse.up();
  await waitFor(async () => same(await servingOrder(d), [c, a, b]), 'c moved before a in the daemon', 15000);
  // The page shows the daemon's order (which it knows from serving_position; a daemon that
  // does not send it leaves the page in priority and id order).
  const positioned = (await d.api('/v1/status?active=1')).jobs.some((j) => j.serving_position != null);
  const shows = async (ids) => !positioned || same(await page.locator('.pending-row').evaluateAll((els) => els.map((e) => Number(e.dataset.id))), ids);
  await waitFor(() => shows([c, a, b]), 'the page to show c, a, b');

  // Undo puts it back.
  await page.locator('.toast button', { hasText: 'Undo' }).last().click();
  await waitFor(async () => same(await servingOrder(d), [a, b, c]), 'undo restores a, b, c', 15000);

  // Keyboard: Alt+ArrowUp on "second" moves it before "first".
  await page.locator('.toast button.x').evaluateAll((els) => els.forEach((e) => e.click()));
  await waitFor(() => shows([a, b, c]), 'the page to show a, b, c');
  await row(b).focus();
  await page.keyboard.press('Alt+ArrowUp');
  await waitFor(async () => same(await servingOrder(d), [b, a, c]), 'alt+up moves b before a', 15000);

  // Buttons: "move to bottom" on b.
  await waitFor(() => shows([b, a, c]), 'the page to show b first');
  await row(b).getByRole('button', { name: 'move to bottom' }).click();
  await waitFor(async () => same(await servingOrder(d), [a, c, b]), 'b at the bottom', 15000);

  const moved = (await d.api('/v1/events?limit=10000')).events.filter((e) => e.kind === 'job.moved');
  check(moved.length >= 4, `every move is an event (${moved.length})`);
  check(page.problems.length === 0, page.problems.join('\n'));
  d.gpuq(['cancel', ...busy.map(String), String(a), String(b), String(c)]);
});
