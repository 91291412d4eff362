// SPDX-License-Identifier: Apache-2.0
// The job page's steps: a real job of three steps, held while the page opens, then released.
// Its second and third steps each wait for a file the test makes, so the page is seen with each
// running (marked, in the title as "step 1 of 0–2: ...", its duration ticking); the move from the
// second to the third is told by the step events alone (no other event of the job), so the
// page follows them live. At the end the first two succeeded and the third failed with exit 3.
// A job without steps has no steps section; a job with an image shows it for each step.
import { writeFileSync } from 'node:fs';
import { run, newPage, check, waitFor } from './harness.mjs';

// Each row of the steps table as {n, name, state, started, took, exit, run, current}.
const rows = (page) => page.locator('table.steps tbody tr').evaluateAll((trs) => trs.map((tr) => {
  const td = [...tr.querySelectorAll('td')].map((c) => c.textContent.trim());
  return { n: td[0], name: td[1], state: td[2], stateClass: tr.querySelector('.badge').className,
    started: td[3], took: td[4], exit: td[5], run: td[6], current: tr.getAttribute('aria-current') };
}));

await run('the job page shows a job\'s steps and follows them live', async (d, browser) => {
  const plain = d.submit('true', ['--name', 'plain']);
  const id = JSON.parse(d.gpuq(['submit', '--json', '--name', 'pipe', '--cwd', d.home, '--hold',
    '--step', 'bash -c "echo prepared"',
    '--step', "sh -c 'while [ ! -e go ]; do sleep 0.05; done; echo trained'",
    '--step', "sh -c 'while [ ! -e go2 ]; do sleep 0.05; done; echo evaluated; exit 3'"])).id;
  await waitFor(() => d.json(['show', String(plain)]).state === 'succeeded', 'the plain job to finish');

  const page = await newPage(browser);
  await page.goto(d.link());
  // A job without steps: no steps section.
  await page.goto(`${d.origin}/#/job/${plain}`);
  await page.locator('.job-page table.runs').waitFor();
  check(await page.locator('table.steps').count() === 0, 'a job without steps shows no steps');
  check(await page.locator('.step-progress').count() === 0, 'a job without steps shows no step progress');

  // Held: every step pending, nothing marked.
  await page.goto(`${d.origin}/#/job/${id}`);
  await page.locator('table.steps tbody tr').nth(2).waitFor();
  let r = await rows(page);
  check(r.length === 3, `three steps (${r.length})`);
  check(r.map((x) => x.n).join() === '0,1,2', `numbered from 0, as the CLI and API do: ${r.map((x) => x.n)}`);
  check(r[0].name === 'bash -c echo prepared', `the first step's name: ${r[0].name}`);
  check(r.every((x) => x.state === 'pending' && x.exit === '—' && x.current == null), `all pending: ${JSON.stringify(r)}`);
  check(await page.locator('table.steps th', { hasText: 'image' }).count() === 0, 'no image column without images');

  // Released: the page follows the run live to the second step, which waits for its file.
  d.gpuq(['release', String(id)]);
  const progress = page.locator('.title-row .step-progress');
  await progress.filter({ hasText: 'step 1 of 0–2: sh -c while' }).waitFor({ timeout: 10000 });
  await page.locator('table.steps tr[aria-current="step"]', { hasText: 'running' }).waitFor({ timeout: 10000 });
  r = await rows(page);
  check(r[0].state === 'succeeded' && r[0].exit === '0' && r[0].run === '1' && r[0].took !== '—', `step 1 done: ${JSON.stringify(r[0])}`);
  check(r[1].state === 'running' && r[1].current === 'step' && r[1].exit === '—' && r[1].started !== '—',
    `step 2 running and marked: ${JSON.stringify(r[1])}`);
  check(/\bbadge running\b/.test(r[1].stateClass), `a running badge: ${r[1].stateClass}`);
  check(r[2].state === 'pending' && r[2].current == null && r[2].run === '—', `step 3 pending: ${JSON.stringify(r[2])}`);
  // The running step's duration ticks, with no reload.
  const took = r[1].took;
  await waitFor(async () => (await rows(page))[1].took !== took, `the running step's duration to tick from ${took}`, 5000);

  // The first file: step 2 ends and step 3 starts, which only the step events tell.
  writeFileSync(`${d.home}/go`, '');
  await progress.filter({ hasText: 'step 2 of 0–2: sh -c while [ ! -e go2 ]' }).waitFor({ timeout: 10000 });
  await page.locator('table.steps tr[aria-current="step"]', { hasText: 'go2' }).waitFor({ timeout: 10000 });
  r = await rows(page);
  check(r[1].state === 'succeeded' && r[1].exit === '0' && r[1].current == null, `step 2 done: ${JSON.stringify(r[1])}`);
  check(r[2].state === 'running' && r[2].current === 'step', `step 3 running: ${JSON.stringify(r[2])}`);

  // The second file: step 3 fails, and so does the job.
  writeFileSync(`${d.home}/go2`, '');
  await page.locator('.title-row .badge.failed').waitFor({ timeout: 10000 });
  await waitFor(async () => (await rows(page))[2].state === 'failed', 'step 3 failed on the page', 10000);
  r = await rows(page);
  check(r[0].state === 'succeeded' && r[0].exit === '0', `step 1: ${JSON.stringify(r[0])}`);
  check(r[1].state === 'succeeded' && r[1].exit === '0' && r[1].took !== '—', `step 2: ${JSON.stringify(r[1])}`);
  check(r[2].state === 'failed' && r[2].exit === '3' && r[2].run === '1', `step 3: ${JSON.stringify(r[2])}`);
  check(/\bbadge failed\b/.test(r[2].stateClass), `a failed badge: ${r[2].stateClass}`);
  check(r.every((x) => x.current == null), 'no step marked once the job ended');
  check(await progress.count() === 0, 'no step progress once the job ended');
  // The step events are in the job's events.
  await page.locator('ul.events li', { hasText: 'job.step_finished' }).nth(2).waitFor();

  // A retry resumes at the step that failed, and the runs table names it as the steps are
  // numbered (from 0): run 2 began at step 2.
  d.gpuq(['retry', String(id)]);
  await page.locator('table.runs tbody tr', { hasText: 'from step' }).waitFor({ timeout: 10000 });
  const resumed = await page.locator('table.runs tbody tr', { hasText: 'from step' }).first().textContent();
  check(/from step 2\b/.test(resumed), `the resumed run's first step, numbered from 0: ${resumed}`);

  // A job with an image: each step's image is shown (held, so no runtime is needed).
  const boxed = JSON.parse(d.gpuq(['submit', '--json', '--hold', '--image', 'alpine:3.20', '--step', 'true', '--step', 'false'])).id;
  await page.goto(`${d.origin}/#/job/${boxed}`);
  await page.locator('table.steps th', { hasText: 'image' }).waitFor();
  const images = await page.locator('table.steps tbody td code').allTextContents();
  check(images.join() === 'alpine:3.20,alpine:3.20', `each step's image: ${images}`);
  check(page.problems.length === 0, page.problems.join('\n'));
  await page.context().close();
  d.gpuq(['cancel', String(boxed)]);
});
