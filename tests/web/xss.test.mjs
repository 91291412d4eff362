// SPDX-License-Identifier: Apache-2.0
// Cross-site scripting through what jobs and users write: a job's command, a step's name (a
// command step's default name is its command), the lines it prints, the reason it waits (a REQUIRES test's text) and the event payload that tells of that wait all
// hold markup that would run if a page put it into the DOM as HTML. Every page that shows them
// must show the markup as text: no element made from it, nothing run, no CSP violation (the
// policy would block inline code, and say so, if markup got in). A job name cannot hold markup
// at all. docs/dashboard.md, "Attacks and what stops them".
import { run, newPage, check, waitFor } from './harness.mjs';

// Markup that runs in three ways if it is parsed: an event handler, a script, an SVG onload.
const payload = (n) => `<img src=x onerror="window.__xss=${n}"><script>window.__xss=${n}</script><svg onload="window.__xss=${n}">`;

// The page has no element made from the markup, nothing of it ran, and the browser reported no
// script error or CSP violation.
async function expectInert(page, where) {
  const made = await page.evaluate(() => document.querySelectorAll('img[src="x"], svg[onload], script:not([src])').length);
  check(made === 0, `${where}: ${made} element(s) made from the markup`);
  const ran = await page.evaluate(() => window.__xss);
  check(ran === undefined, `${where}: the markup ran (window.__xss = ${ran})`);
  check(page.problems.length === 0, `${where}: ${page.problems.join('\n')}`);
}

await run('markup in commands, logs, reasons and events is shown as text and never runs', async (d, browser) => {
  // A name cannot hold markup: the submit is refused, nothing queued.
  d.gpuq(['submit', '--name', '<b onmouseover=x>n</b>', '--', 'true'], { ok: [1, 2] });
  check(d.json(['status']).jobs.length === 0, 'no job queued under a markup name');

  const printer = d.submit(`echo '${payload(1)}'`, ['--name', 'printer']);
  // Steps named by their commands: a step's name is clipped at 60 characters, so one markup each.
  const stepper = JSON.parse(d.gpuq(['submit', '--json', '--name', 'stepper',
    '--step', "echo '<img src=x onerror=window.__xss=3>'", '--step', "echo '<svg onload=window.__xss=4>'",
    '--step', "echo '<script>window.__xss=5</script>'"])).id;
  const waiter = d.submit('true', ['--name', 'waiter', '--requires', `test -f '${payload(2)}'`, '--requires-warn', '1s']);
  await waitFor(() => d.json(['show', String(printer)]).state === 'succeeded', 'the printer to finish');
  await waitFor(() => d.json(['show', String(stepper)]).state === 'succeeded', 'the stepper to finish');
  await waitFor(async () => (await d.api('/v1/events?after=0')).events.some(
    (e) => e.kind === 'job.requires_wait' && e.job === waiter && JSON.stringify(e.data).includes('onerror')),
  'job.requires_wait with the markup in its payload');

  const page = await newPage(browser);
  await page.goto(d.link());
  // The queue: the waiting job's reason holds the REQUIRES text.
  await page.locator('.reason', { hasText: 'onerror' }).first().waitFor();
  await expectInert(page, 'the queue');
  // The printer's page: its command and its log.
  await page.goto(`${d.origin}/#/job/${printer}`);
  await page.locator('pre.log-text .line', { hasText: 'onerror' }).first().waitFor();
  await page.getByText('window.__xss=1', { exact: false }).first().waitFor();
  await expectInert(page, 'the job page of the printer');
  // The stepper's page: its steps' names, its command and its step events.
  await page.goto(`${d.origin}/#/job/${stepper}`);
  await page.locator('table.steps td.name', { hasText: 'onerror' }).waitFor();
  await page.locator('table.steps td.name', { hasText: '<svg onload' }).waitFor();
  await page.locator('table.steps td.name', { hasText: '<script>' }).waitFor();
  await page.locator('ul.events li', { hasText: 'job.step_finished' }).nth(2).waitFor();
  await expectInert(page, 'the job page of the stepper');
  // The waiter's page: its reason.
  await page.goto(`${d.origin}/#/job/${waiter}`);
  await page.locator('.reason', { hasText: 'onerror' }).first().waitFor();
  await expectInert(page, 'the job page of the waiter');
  // The event feed: the payload of job.requires_wait.
  await page.goto(`${d.origin}/#/events`);
  await page.locator('code.data', { hasText: 'onerror' }).first().waitFor();
  await expectInert(page, 'the events page');
  // The timeline draws the jobs by name and command.
  await page.goto(`${d.origin}/#/timeline`);
  await page.locator('svg.gantt').first().waitFor();
  await expectInert(page, 'the timeline');
  await page.context().close();
  d.gpuq(['cancel', String(waiter)]);
});
