// SPDX-License-Identifier: Apache-2.0
// The browser tests' harness: a real gpuq daemon (the build's binary, fake:4 GPUs, its own
// temporary home, --http 127.0.0.1:0) driven through the real `gpuq` CLI, and a headless
// Debian chromium driven by playwright-core. stop() ends the daemon and SIGKILLs every run it
// left (their processes carry GPUQ_RUN_DIR under the home), so a failed test leaves nothing.
// Never sleep and check: wait for a condition (waitFor, or playwright's waiting locators).
//
// GPUQ_WEB_TEST_PROXY=1: the browser talks to tests/web/dev_server.mjs instead, which serves
// the pages from <build>/web/dist and forwards /v1 to the same daemon's TCP listener (so the
// daemon's policy and the real token still judge every request).
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const require = createRequire(join(root, 'web/package.json'));
const { chromium } = require('playwright-core');

export const BUILD = resolve(process.env.GPUQ_BUILD_DIR || join(root, 'build'));
export const GPUQ = process.env.GPUQ_BIN || join(BUILD, 'bin/gpuq');
export const CHROMIUM = process.env.GPUQ_CHROMIUM || '/usr/bin/chromium';
const PROXY = process.env.GPUQ_WEB_TEST_PROXY === '1';

// Polls `fn` (sync or async) every 50 ms until it returns something truthy; throws `what` after
// `ms`.
export async function waitFor(fn, what, ms = 30000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last && (last.message || JSON.stringify(last))})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// GET a JSON path over a daemon's unix socket.
export function unixGet(sock, path) {
  return new Promise((resolveP, reject) => {
    const req = http.request({ socketPath: sock, path, method: 'GET', headers: { host: 'gpuq' } }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => (res.statusCode === 200 ? resolveP(JSON.parse(body)) : reject(new Error(`${path}: ${res.statusCode} ${body}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

// The processes whose environment has a variable that starts with `needle`.
export function pidsWithEnv(needle) {
  const out = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/environ`, 'latin1').split('\0').some((v) => v.startsWith(needle))) out.push(Number(p));
    } catch (_) { /* gone, or not ours */ }
  }
  return out;
}

export const alive = (pid) => {
  try { return !/^\S+ \S+ Z/.test(readFileSync(`/proc/${pid}/stat`, 'latin1').replace(/\(.*\)/, 'x')); } catch (_) { return false; }
};

export class Daemon {
  constructor({ gpus = 'fake:4', allowSubmit = false, env = {} } = {}) {
    this.env = { ...process.env, ...env };
    this.home = mkdtempSync(join(tmpdir(), 'gpuq-web-'));
    this.gpus = gpus;
    this.allowSubmit = allowSubmit;
  }

  // gpuq --home HOME args...; throws on a non-zero exit unless `ok` allows it. Returns stdout.
  gpuq(args, { ok = [0] } = {}) {
    const r = spawnSync(GPUQ, ['--home', this.home, ...args], { encoding: 'utf8', cwd: this.home, timeout: 60000, env: this.env });
    if (!ok.includes(r.status)) throw new Error(`gpuq ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
    return r.stdout;
  }

  json(args) { return JSON.parse(this.gpuq([...args, '--json'])); }

  // Submits `sh -c SCRIPT` with extra flags; returns the job id.
  submit(script, flags = []) {
    return JSON.parse(this.gpuq(['submit', '--json', ...flags, '--', 'sh', '-c', script])).id;
  }

  api(path) { return unixGet(join(this.home, 'gpuq.sock'), path); }

  async start() {
    const args = ['daemon', '--detach', '--gpus', this.gpus];
    args.push('--http', this.listen || '127.0.0.1:0');
    if (this.allowSubmit) args.push('--http-allow-submit');
    this.gpuq(args);
    const health = await waitFor(() => this.api('/v1/health'), 'the daemon to answer');
    this.pid = health.pid;
    if (this.origin) return this;  // a restart: the same address
    if (!health.http || !health.http.listen) throw new Error(`the daemon has no TCP listener: ${JSON.stringify(health.http)}`);
    this.listen = health.http.listen;
    this.token = readFileSync(join(this.home, 'token'), 'utf8').trim();
    if (PROXY) {
      const { startDevServer } = await import('./dev_server.mjs');
      const { server, port } = await startDevServer({ dist: join(BUILD, 'web/dist'), home: this.home });
      this.devServer = server;
      this.origin = `http://127.0.0.1:${port}`;
    } else {
      this.origin = `http://${health.http.listen}`;
    }
    return this;
  }

  // The link `gpuq dashboard` prints, with a route after the token exchange.
  link() { return `${this.origin}/#token=${this.token}`; }

  // SIGTERM the daemon and wait until it has gone (its runs keep going).
  async stopDaemon() {
    if (this.pid && alive(this.pid)) {
      process.kill(this.pid, 'SIGTERM');
      await waitFor(() => !alive(this.pid), 'the daemon to exit', 20000);
    }
  }

  async stop() {
    if (this.devServer) { this.devServer.closeAllConnections(); this.devServer.close(); }
    if (this.pid && alive(this.pid)) {
      process.kill(this.pid, 'SIGTERM');
      await waitFor(() => !alive(this.pid), 'the daemon to exit', 20000).catch(() => process.kill(this.pid, 'SIGKILL'));
    }
    const left = pidsWithEnv(`GPUQ_RUN_DIR=${this.home}/`);
    for (const pid of left) { try { process.kill(pid, 'SIGKILL'); } catch (_) { /* gone */ } }
    await waitFor(() => left.every((p) => !alive(p)), 'runs to die', 10000).catch(() => {});
    if (!process.env.GPUQ_KEEP_TEST_DIRS) rmSync(this.home, { recursive: true, force: true });
  }
}

export const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'];

export async function launch() {
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: apt-get install chromium (scripts/test.sh does)`);
  return chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
}

// A page that fails the test on a script error or a Content-Security-Policy violation.
export async function newPage(browser, { width = 1280, height = 900, colorScheme = 'light' } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme });
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content.Security.Policy|Refused to/i.test(m.text())) page.problems.push(`CSP: ${m.text()}`);
  });
  return page;
}

// Runs `body(daemon, browser)` with a fresh daemon and browser, cleaning both up whatever
// happens; prints PASS/FAIL lines and sets the exit status (CTest reads it).
export async function run(name, body, options = {}) {
  const daemon = new Daemon(options);
  let browser = null;
  try {
    await daemon.start();
    browser = await launch();
    await body(daemon, browser);
    console.log(`PASS ${name}`);
  } catch (e) {
    console.error(`FAIL ${name}: ${e.stack || e}`);
    if (daemon.home) console.error(`daemon home: ${daemon.home}`);
    process.exitCode = 1;
  } finally {
    if (browser) await browser.close().catch(() => {});
    await daemon.stop().catch((e) => console.error(`cleanup: ${e}`));
  }
}

export function check(cond, message) {
  if (!cond) throw new Error(message);
}
