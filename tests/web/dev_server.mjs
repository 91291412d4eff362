// SPDX-License-Identifier: Apache-2.0
// A development server for the dashboard, for working on the pages without rebuilding gpuq:
// serves the freshly built files (--dist) with the daemon's security headers and forwards
// /v1/* and /metrics to the daemon's own TCP listener (the daemon started with --http), so the
// daemon's policy judges every request exactly as it judges its own pages' (the token, by
// Bearer header or session cookie; Host; Origin and X-Gpuq-Csrf on a POST; the submit gate).
// This server holds no token and grants nothing: it refuses a Host that is not its own address
// (DNS rebinding), sends the daemon its own listen address as Host, and rewrites Origin to the
// daemon's only when the browser's Origin is this server's own (http:// + the Host it sent);
// any other Origin goes on unchanged, for the daemon to refuse. Never the unix socket: that
// needs no token, so forwarding to it would let any local user or web page act as you.
// Also used by the browser tests when GPUQ_WEB_TEST_PROXY=1.
//   node tests/web/dev_server.mjs --dist build/web/dist --home /tmp/x [--port 8080]
//   node tests/web/dev_server.mjs --dist build/web/dist --daemon 127.0.0.1:7878 [--port 8080]
import http from 'node:http';
import { readFileSync, statSync } from 'node:fs';
import { join, extname, normalize, resolve } from 'node:path';

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png' };
const SECURITY = { 'Content-Security-Policy': "default-src 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'X-Frame-Options': 'DENY' };
// The same, named as rawHeaders are grouped: they replace the daemon's rather than repeat them.
const SECURITY_LOWER = Object.fromEntries(Object.entries(SECURITY).map(([k, v]) => [k.toLowerCase(), v]));
// Headers about one connection, not the request: never forwarded either way.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer',
  'transfer-encoding', 'upgrade']);

// A HOST:PORT (or [V6]:PORT) as { host, port, hostHeader }, where host is what to connect to
// and hostHeader what to send as Host; a wildcard listener is reached on its loopback.
export function parseAddress(text) {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+):(\d{1,5})$/.exec(String(text).trim());
  if (!m) throw new Error(`'${text}' is not HOST:PORT`);
  let name = m[1].toLowerCase();
  if (name === '0.0.0.0') name = '127.0.0.1';
  if (name === '[::]') name = '[::1]';
  return { host: name.replace(/^\[|\]$/g, ''), port: Number(m[2]), hostHeader: `${name}:${m[2]}` };
}

// GET /v1/health over the home's unix socket (which needs no token).
function unixHealth(socketPath) {
  return new Promise((resolveP, reject) => {
    const req = http.request({ socketPath, path: '/v1/health', headers: { host: 'gpuq' } }, (res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`/v1/health: ${res.statusCode} ${body}`));
        try { resolveP(JSON.parse(body)); } catch (e) { reject(e); }
      });
    });
    req.on('error', reject);
    req.end();
  });
}

// The daemon's TCP listener: `daemon` (HOST:PORT) when given, else the one the daemon of
// `home` reports. Throws, saying what to do, when there is none.
export async function findDaemon({ home, daemon }) {
  if (daemon) return parseAddress(daemon);
  if (!home) throw new Error('name the daemon: --home DIR (or $GPUQ_HOME), or --daemon HOST:PORT');
  const socketPath = join(home, 'gpuq.sock');
  let health;
  try {
    health = await unixHealth(socketPath);
  } catch (e) {
    throw new Error(`no daemon answers on ${socketPath} (${e.message}): start one with ` +
      `gpuq --home ${home} daemon --detach --http 127.0.0.1:0`);
  }
  if (!health.http || !health.http.listen) {
    throw new Error(`the daemon of ${home} has no TCP listener (started with --http off, [http] ` +
      'listen = "off", or its default address was in use), and this server forwards only to that: ' +
      `restart it with gpuq --home ${home} daemon --detach --http 127.0.0.1:0`);
  }
  return parseAddress(health.http.listen);
}

function refuse(res, status, code, message) {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...SECURITY });
  res.end(JSON.stringify({ error: { code, message } }));
}

// rawHeaders as { name: [values] }, without the hop-by-hop ones and those in `skip`.
function groupHeaders(raw, skip = new Set()) {
  const out = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (HOP_BY_HOP.has(name) || skip.has(name)) continue;
    (out[name] ||= []).push(raw[i + 1]);
  }
  return out;
}

function rawValues(raw, name) {
  const values = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i].toLowerCase() === name) values.push(raw[i + 1]);
  return values;
}

// Forwards the request to the daemon's listener: every header as sent but Host (the
// daemon's address) and Origin (the daemon's, only where the browser's was this server's).
function forward(req, res, daemon, sentHost) {
  const headers = groupHeaders(req.rawHeaders, new Set(['host', 'origin']));
  headers.host = daemon.hostHeader;
  const origins = rawValues(req.rawHeaders, 'origin');
  if (origins.length === 1 && origins[0] === `http://${sentHost}`) {
    headers.origin = `http://${daemon.hostHeader}`;
  } else if (origins.length > 0) {
    headers.origin = origins;
  }
  const up = http.request({ host: daemon.host, port: daemon.port, path: req.url, method: req.method, headers }, (ur) => {
    res.writeHead(ur.statusCode, ur.statusMessage, { ...groupHeaders(ur.rawHeaders), ...SECURITY_LOWER });
    // A stream the daemon drops (it stopped) is dropped here too, not left open: the page
    // must see the drop to show that the daemon is away and to reconnect.
    ur.on('close', () => { if (!ur.complete) res.destroy(); });
    ur.pipe(res);
  });
  up.on('error', (e) => {
    if (res.headersSent) { res.destroy(); return; }
    refuse(res, 502, 'unavailable', `the daemon at ${daemon.hostHeader} did not answer: ${e.message}`);
  });
  req.pipe(up);
  res.on('close', () => up.destroy());
}

function serveFile(res, dist, pathname) {
  const name = pathname === '/' ? '/index.html' : normalize(pathname);
  const file = join(dist, name);
  let isFile = false;
  try { isFile = file.startsWith(dist) && statSync(file).isFile(); } catch (_) { /* absent */ }
  if (!isFile) {
    res.writeHead(404, SECURITY);
    res.end('not found');
    return;
  }
  res.writeHead(200, { 'Content-Type': TYPES[extname(file)] || 'application/octet-stream',
    'Cache-Control': 'no-cache', ...SECURITY });
  res.end(readFileSync(file));
}

// Starts the server on host:port (0: any free port) in front of the daemon that `home` reports
// (or `daemon`, HOST:PORT). Resolves { server, port, daemon }; rejects when there is no
// listener to forward to.
export async function startDevServer({ dist, home, daemon: daemonAddress, port = 0, host = '127.0.0.1' }) {
  const daemon = await findDaemon({ home, daemon: daemonAddress });
  const own = new Set();  // the Host values that name this server, filled once it listens
  const server = http.createServer((req, res) => {
    const hosts = rawValues(req.rawHeaders, 'host');
    if (hosts.length !== 1) {
      refuse(res, 400, 'bad_host', `a request must carry exactly one Host header (this one has ${hosts.length})`);
      return;
    }
    if (!own.has(hosts[0].trim().toLowerCase())) {
      refuse(res, 403, 'forbidden_host', `this development server answers only to ${[...own].join(', ')}, ` +
        `not to the host name '${hosts[0].slice(0, 100)}'`);
      return;
    }
    if (!req.url.startsWith('/')) {
      refuse(res, 400, 'bad_target', 'the request target is not a path: this server is no proxy');
      return;
    }
    const { pathname } = new URL(req.url, 'http://x');
    if (pathname.startsWith('/v1/') || pathname === '/metrics') {
      forward(req, res, daemon, hosts[0].trim());
    } else {
      serveFile(res, dist, pathname);
    }
  });
  await new Promise((resolveP, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolveP);
  });
  const bound = server.address().port;
  const bind = host.includes(':') ? `[${host}]` : host;
  for (const name of ['127.0.0.1', 'localhost', '[::1]', bind]) own.add(`${name.toLowerCase()}:${bound}`);
  return { server, port: bound, daemon: daemon.hostHeader };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
  try {
    const { port, daemon } = await startDevServer({
      dist: resolve(arg('--dist', 'build/web/dist')), home: arg('--home', process.env.GPUQ_HOME),
      daemon: arg('--daemon'), port: Number(arg('--port', 8080)) });
    console.log(`dashboard on http://127.0.0.1:${port}/ (forwarding /v1 to the daemon at ${daemon}); ` +
      'sign in with the #token= part of the link `gpuq dashboard --no-open` prints');
  } catch (e) {
    console.error(`dev_server: ${e.message}`);
    process.exit(2);
  }
}
