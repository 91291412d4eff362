// SPDX-License-Identifier: Apache-2.0
// The dashboard's sign-in in a real browser: the link's token is traded for a browser session
// whose cookie holds a random value of its own (never the token), named after the listener's
// port; the session outlives a restart of the daemon; "Sign out" ends it, so the same cookie
// no longer opens anything, wherever a copy of it went.
import { run, newPage, check, waitFor } from './harness.mjs';

// GET `path` from the page's origin with `cookie` only: the answer's status.
async function statusWithCookie(d, path, cookie) {
  const res = await fetch(`${d.origin}${path}`, { headers: { Cookie: cookie } });
  await res.arrayBuffer();
  return res.status;
}

await run('a browser signs in with a session of its own, kept across a restart, ended by Sign out', async (d, browser) => {
  const page = await newPage(browser);
  await page.goto(d.link());
  await page.locator('table.gpus').waitFor();
  const listen = (await d.api('/v1/health')).http.listen;
  const name = `gpuq_session_${listen.split(':').pop()}`;
  const cookies = await waitFor(async () => {
    const all = await page.context().cookies();
    return all.some((c) => c.name === name) && all;
  }, `the cookie ${name}`);
  const session = cookies.find((c) => c.name === name);
  check(/^[0-9a-f]{64}$/.test(session.value), `the session's value: ${session.value}`);
  check(!cookies.some((c) => c.value.includes(d.token)), `a cookie carries the token: ${cookies.map((c) => c.name)}`);
  check(session.httpOnly && session.sameSite === 'Strict', `the cookie's flags: ${JSON.stringify(session)}`);
  check(!(await page.evaluate(() => document.cookie)).includes(session.value), 'the page script reads the cookie');
  const cookie = `${name}=${session.value}`;
  check(await statusWithCookie(d, '/v1/status', cookie) === 200, 'the session does not open /v1/status');
  check(await statusWithCookie(d, '/v1/status', `gpuq_token=${d.token}`) === 401, 'a cookie holding the token is read');

  // A restart keeps it: the page reconnects without a new link.
  await d.stopDaemon();
  await page.locator('.banner.down').waitFor();
  await d.start();
  await page.locator('.banner.down').waitFor({ state: 'detached', timeout: 60000 });
  check(await statusWithCookie(d, '/v1/status', cookie) === 200, 'the session did not outlive the restart');

  // Sign out: the page says so, and the same value opens nothing any more.
  await page.locator('header.top button.signout').click();
  await page.locator('main.unauth').waitFor();
  check(await statusWithCookie(d, '/v1/status', cookie) === 401, 'the session still works after Sign out');
  const after = await page.context().cookies();
  check(!after.some((c) => c.name === name), `the cookie was not cleared: ${JSON.stringify(after)}`);
  // The link signs in again, with a new session.
  await page.goto(d.link());
  await page.reload();
  await page.locator('table.gpus').waitFor();
  const again = (await page.context().cookies()).find((c) => c.name === name);
  check(again && again.value !== session.value, 'no new session after signing in again');
  check(page.problems.length === 0, page.problems.join('\n'));
});
