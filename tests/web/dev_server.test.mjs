// SPDX-License-Identifier: Apache-2.0
// The development server (tests/web/dev_server.mjs) grants nothing the daemon's own TCP
// listener would not: real HTTP over real sockets, against a real daemon (fake:4, its own
// temporary home, --http 127.0.0.1:0, no --http-allow-submit). No browser: plain node http,
// which may send any Host and Origin, as a local process or a rebound page can.
// GPUQ_DEV_SERVER=FILE tests another copy of the server (to see an old one fail).
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const BUILD = resolve(process.env.GPUQ_BUILD_DIR || join(here, '../../build'));
const GPUQ = process.env.GPUQ_BIN || join(BUILD, 'bin/gpuq');
const DIST = join(BUILD, 'web/dist');
const { startDevServer } = await import(pathToFileURL(resolve(process.env.GPUQ_DEV_SERVER || join(here, 'dev_server.mjs'))).href);

function check(cond, message) {
  if (!cond) throw new Error(message);
}

// One HTTP request with exactly these headers (Host included); resolves { status, headers, body }.
function request(port, { method = 'GET', path, headers = {}, body }) {
  return new Promise((resolveP, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, setHost: false, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolveP({ status: res.statusCode, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const code = (r) => { try { return JSON.parse(r.body).error.code; } catch (_) { return null; } };
const show = (r) => `${r.status} ${r.body.slice(0, 300)}`;

function unixHealth(home) {
  return new Promise((resolveP, reject) => {
    const req = http.request({ socketPath: join(home, 'gpuq.sock'), path: '/v1/health', headers: { host: 'gpuq' } }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => (res.statusCode === 200 ? resolveP(JSON.parse(text)) : reject(new Error(text))));
    });
    req.on('error', reject);
    req.end();
  });
}

async function waitFor(fn, what, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    try { const v = await fn(); if (v) return v; } catch (_) { /* not yet */ }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const alive = (pid) => {
  try { return !/^\S+ \S+ Z/.test(readFileSync(`/proc/${pid}/stat`, 'latin1').replace(/\(.*\)/, 'x')); } catch (_) { return false; }
};

// A daemon in a fresh home (with `http` its listener's address); stop() ends it and removes
// the home.
async function startDaemon(extra) {
  const home = mkdtempSync(join(tmpdir(), 'gpuq-devsrv-'));
  const daemon = { home, pid: 0 };
  daemon.stop = async () => {
    if (daemon.pid && alive(daemon.pid)) {
      process.kill(daemon.pid, 'SIGTERM');
      await waitFor(() => !alive(daemon.pid), 'the daemon to exit', 20000).catch(() => process.kill(daemon.pid, 'SIGKILL'));
    }
    if (!process.env.GPUQ_KEEP_TEST_DIRS) rmSync(home, { recursive: true, force: true });
  };
  const r = spawnSync(GPUQ, ['--home', home, 'daemon', '--detach', '--gpus', 'fake:4', ...extra],
    { encoding: 'utf8', cwd: home, timeout: 60000 });
  if (r.status !== 0) {
    await daemon.stop();
    throw new Error(`gpuq daemon: exit ${r.status}: ${r.stderr}`);
  }
  try {
    const health = await waitFor(() => unixHealth(home), 'the daemon to answer');
    daemon.pid = health.pid;
    daemon.http = health.http;
  } catch (e) {
    await daemon.stop();
    throw e;
  }
  return daemon;
}

const cleanups = [];
let failed = 0;
async function test(name, body) {
  try {
    await body();
    console.log(`PASS ${name}`);
  } catch (e) {
    failed++;
    console.error(`FAIL ${name}: ${e.stack || e}`);
  }
}

try {
  const daemon = await startDaemon(['--http', '127.0.0.1:0']);
  cleanups.push(daemon.stop);
  check(daemon.http && daemon.http.listen, `the daemon has a TCP listener: ${JSON.stringify(daemon.http)}`);
  const token = readFileSync(join(daemon.home, 'token'), 'utf8').trim();
  const { server, port } = await startDevServer({ dist: DIST, home: daemon.home });
  cleanups.unshift(async () => { server.closeAllConnections(); await new Promise((r) => server.close(r)); });
  const self = `127.0.0.1:${port}`;
  const bearer = { authorization: `Bearer ${token}` };
  const job = JSON.stringify({ argv: ['true'], cwd: daemon.home, env: { PATH: '/usr/bin:/bin' } });
  const post = (headers) => request(port, { method: 'POST', path: '/v1/jobs', body: job,
    headers: { host: self, 'content-type': 'application/json', ...headers } });

  await test('an API request without the token is refused (401)', async () => {
    const r = await request(port, { path: '/v1/status', headers: { host: self } });
    check(r.status === 401 && code(r) === 'unauthenticated', `GET /v1/status without a token: ${show(r)}`);
    const m = await request(port, { path: '/metrics', headers: { host: self } });
    check(m.status === 401, `GET /metrics without a token: ${show(m)}`);
  });

  await test('the token (Authorization: Bearer) is answered (200), with the security headers', async () => {
    const r = await request(port, { path: '/v1/status', headers: { host: self, ...bearer } });
    check(r.status === 200, `GET /v1/status with the token: ${show(r)}`);
    check(r.headers['x-frame-options'] === 'DENY' && r.headers['content-security-policy'] === "default-src 'self'; frame-ancestors 'none'",
      `security headers: ${JSON.stringify(r.headers)}`);
    const wrong = await request(port, { path: '/v1/status', headers: { host: self, authorization: `Bearer ${'ab'.repeat(32)}` } });
    check(wrong.status === 401, `a made-up token: ${show(wrong)}`);
  });

  await test('a POST from a foreign Origin or without X-Gpuq-Csrf is refused (403)', async () => {
    const foreign = await post({ ...bearer, origin: 'http://evil.example', 'x-gpuq-csrf': '1' });
    check(foreign.status === 403 && code(foreign) === 'forbidden_origin', `foreign Origin: ${show(foreign)}`);
    // No Origin at all: none is made up for it.
    const none = await post({ ...bearer, 'x-gpuq-csrf': '1' });
    check(none.status === 403 && code(none) === 'forbidden_origin', `no Origin: ${show(none)}`);
    const noCsrf = await post({ ...bearer, origin: `http://${self}` });
    check(noCsrf.status === 403 && code(noCsrf) === 'csrf_missing', `no X-Gpuq-Csrf: ${show(noCsrf)}`);
    const noToken = await post({ origin: `http://${self}`, 'x-gpuq-csrf': '1' });
    check(noToken.status === 401, `no token: ${show(noToken)}`);
  });

  await test('a POST with token, Origin and CSRF header meets the submit gate (403 submit_disabled)', async () => {
    for (const name of [self, `localhost:${port}`]) {
      const r = await post({ ...bearer, host: name, origin: `http://${name}`, 'x-gpuq-csrf': '1' });
      check(r.status === 403 && code(r) === 'submit_disabled', `POST /v1/jobs via ${name}: ${show(r)}`);
    }
    const first = await request(port, { path: '/v1/jobs/1', headers: { host: self, ...bearer } });
    check(first.status === 404, `no job was submitted: ${show(first)}`);
  });

  await test('the daemon\'s session cookie passes both ways', async () => {
    const r = await request(port, { method: 'POST', path: '/v1/session',
      headers: { host: self, ...bearer, origin: `http://${self}`, 'x-gpuq-csrf': '1' } });
    const cookie = (r.headers['set-cookie'] || [])[0] || '';
    check(r.status === 204 && /HttpOnly/i.test(cookie), `POST /v1/session: ${show(r)} ${cookie}`);
    const pair = cookie.split(';')[0];
    const s = await request(port, { path: '/v1/status', headers: { host: self, cookie: pair } });
    check(s.status === 200, `GET /v1/status with the cookie: ${show(s)}`);
    const forged = await request(port, { method: 'POST', path: '/v1/session',
      headers: { host: self, origin: `http://${self}`, 'x-gpuq-csrf': '1' } });
    check(forged.status === 401 && !forged.headers['set-cookie'], `POST /v1/session without a token: ${show(forged)}`);
  });

  await test('a Host that is not the server\'s own is refused (403, DNS rebinding)', async () => {
    for (const path of ['/v1/status', '/']) {
      const r = await request(port, { path, headers: { host: `evil.example:${port}`, ...bearer } });
      check(r.status === 403 && code(r) === 'forbidden_host', `${path} with Host evil.example: ${show(r)}`);
    }
    const rebound = await post({ ...bearer, host: `evil.example:${port}`, origin: `http://evil.example:${port}`, 'x-gpuq-csrf': '1' });
    check(rebound.status === 403 && code(rebound) === 'forbidden_host', `a rebound POST: ${show(rebound)}`);
    const other = await request(port, { path: '/v1/status', headers: { host: `127.0.0.1:${port + 1}`, ...bearer } });
    check(other.status === 403, `another port: ${show(other)}`);
  });

  await test('the built pages are served without a token', async () => {
    const r = await request(port, { path: '/', headers: { host: self } });
    check(r.status === 200 && r.body === readFileSync(join(DIST, 'index.html'), 'utf8'), `GET /: ${show(r)}`);
    check(/default-src 'self'/.test(r.headers['content-security-policy']), `CSP on the page: ${JSON.stringify(r.headers)}`);
    const missing = await request(port, { path: '/nothing-here.js', headers: { host: self } });
    check(missing.status === 404, `a missing file: ${show(missing)}`);
  });

  await test('without the daemon\'s TCP listener the server refuses to start', async () => {
    const bare = await startDaemon(['--http', 'off']);
    cleanups.push(bare.stop);
    let started = null;
    let error = null;
    try { started = await startDevServer({ dist: DIST, home: bare.home }); } catch (e) { error = e; }
    if (started) { started.server.closeAllConnections(); started.server.close(); }
    check(error && /--http/.test(error.message), `a clear refusal naming --http: ${error ? error.message : 'it started'}`);
  });

  // Last: it stops the daemon.
  await test('an event stream the daemon drops is dropped here too (the page must see it)', async () => {
    let upstream = null;
    const dropped = new Promise((resolveP, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/v1/events/stream?after=0', agent: false,
        headers: { host: self, ...bearer, accept: 'text/event-stream' } }, (res) => {
        upstream = res;
        res.resume();
        res.on('close', () => resolveP(res.complete ? 'ended' : 'dropped'));
      });
      req.on('error', () => resolveP('dropped'));
      setTimeout(() => { req.destroy(); reject(new Error('the stream stayed open after the daemon stopped')); }, 15000).unref();
    });
    await waitFor(() => upstream, 'the stream to open');
    check(upstream.statusCode === 200, `GET /v1/events/stream: ${upstream.statusCode}`);
    await daemon.stop();
    await dropped;
  });
} catch (e) {
  failed++;
  console.error(`FAIL setup: ${e.stack || e}`);
} finally {
  for (const cleanup of cleanups) await cleanup().catch((e) => console.error(`cleanup: ${e}`));
}
process.exitCode = failed ? 1 : 0;
