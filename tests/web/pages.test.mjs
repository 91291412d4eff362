// SPDX-License-Identifier: Apache-2.0
// Every page renders from a real daemon with no script error and no CSP violation, in light at
// desktop width and in dark at a phone's (390 px, where nothing may widen the page); the link's
// token becomes an HttpOnly session cookie (never the token); a browser without it gets the "not signed in" page.
import { run, newPage, check, waitFor } from './harness.mjs';

const PAGES = [['#/', 'table.gpus'], ['#/job/1', '.job-page'], ['#/timeline', 'svg.gantt'],
  ['#/usage', '.usage-page'], ['#/events', 'ul.events li'], ['#/fleet', '.fleet-page'], ['#/job/4', 'table.steps tr.current']];

await run('every page renders, light and dark, desktop and phone', async (d, browser) => {
  const first = d.submit('echo hello; sleep 600', ['--gpus', '1', '--name', 'first']);
  d.submit('sleep 600', ['--gpus', '2', '--name', 'second']);
  d.submit('sleep 600', ['--gpus', '4', '--name', 'third']);
  check(first === 1, 'job 1 is first');
  // Job 4 has steps, the second running (its name as long as a step's name may be).
  d.gpuq(['submit', '--name', 'stepped', '--step', 'true', '--step', `sh -c 'sleep 600' ${'x'.repeat(60)}`, '--step', 'true']);
  await waitFor(async () => (await d.api('/v1/jobs/4')).step === 1, 'job 4 in its second step');
  for (const [width, scheme] of [[1280, 'light'], [390, 'dark']]) {
    const page = await newPage(browser, { width, height: 800, colorScheme: scheme });
    await page.goto(d.link());
    await page.locator('table.gpus').waitFor();
    if (process.env.GPUQ_WEB_TEST_PROXY !== '1') {
      const cookies = await page.context().cookies();
      const c = cookies.find((x) => x.name.startsWith('gpuq_session_'));
      check(c && c.httpOnly && c.sameSite === 'Strict' && c.value !== d.token,
        `an HttpOnly SameSite=Strict session cookie: ${JSON.stringify(cookies)}`);
    }
    for (const [hash, selector] of PAGES) {
      await page.goto(`${d.origin}/${hash}`);
      await page.locator(selector).first().waitFor();
      if (hash.startsWith('#/job/')) {
        check(await page.getByRole('button', { name: /Resubmit/ }).count() === 0, 'no resubmit without --http-allow-submit');
      }
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      check(wide <= width + 1, `${hash} at ${width}px is ${wide}px wide`);
    }
    check(page.problems.length === 0, page.problems.join('\n'));
    await page.context().close();
  }
  if (process.env.GPUQ_WEB_TEST_PROXY !== '1') {
    const stranger = await newPage(browser);
    await stranger.goto(`${d.origin}/#/`);
    await stranger.locator('.unauth h1', { hasText: 'Not signed in' }).waitFor();
    await stranger.context().close();
  }
  d.gpuq(['cancel', '1', '2', '3', '4']);
  await waitFor(() => d.json(['show', '1']).state === 'cancelled', 'job 1 cancelled');
});
