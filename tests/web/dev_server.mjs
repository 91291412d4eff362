// SPDX-License-Identifier: Apache-2.0
// A development server for the dashboard, for working on the pages without the daemon's TCP
// listener: serves the built files (--dist) with the daemon's security headers and proxies
// /v1/* and /metrics to the daemon's unix socket ($GPUQ_HOME/gpuq.sock), which needs no
// token; POST /v1/session answers 204 here. Also used by the browser tests when
// GPUQ_WEB_TEST_PROXY=1 (a daemon built without --http).
//   node tests/web/dev_server.mjs --dist build/web/dist --home /tmp/x [--port 8080]
import http from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { join, extname, normalize, resolve } from 'node:path';

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png' };
const SECURITY = { 'Content-Security-Policy': "default-src 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'X-Frame-Options': 'DENY' };

export function startDevServer({ dist, home, port = 0, host = '127.0.0.1' }) {
  const socketPath = join(home, 'gpuq.sock');
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/v1/session' || url.pathname === '/v1/session/end') {
      res.writeHead(204, SECURITY);
      res.end();
      return;
    }
    if (url.pathname.startsWith('/v1/') || url.pathname === '/metrics') {
      const headers = { ...req.headers, host: 'gpuq' };
      const up = http.request({ socketPath, path: req.url, method: req.method, headers }, (ur) => {
        res.writeHead(ur.statusCode, { ...ur.headers, ...SECURITY });
        ur.pipe(res);
      });
      up.on('error', (e) => {
        res.writeHead(502, { 'Content-Type': 'application/json', ...SECURITY });
        res.end(JSON.stringify({ error: { code: 'unavailable', message: e.message } }));
      });
      req.pipe(up);
      res.on('close', () => up.destroy());
      return;
    }
    const name = url.pathname === '/' ? '/index.html' : normalize(url.pathname);
    const file = join(dist, name);
    if (!file.startsWith(dist) || !existsSync(file)) {
      res.writeHead(404, SECURITY);
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': TYPES[extname(file)] || 'application/octet-stream',
      'Cache-Control': 'no-cache', ...SECURITY });
    res.end(readFileSync(file));
  });
  return new Promise((resolve) => {
    server.listen(port, host, () => resolve({ server, port: server.address().port }));
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
  const dist = arg('--dist', 'build/web/dist');
  const home = arg('--home', process.env.GPUQ_HOME);
  const { port } = await startDevServer({ dist: resolve(dist), home, port: Number(arg('--port', 8080)) });
  console.log(`dashboard on http://127.0.0.1:${port}/ (daemon ${home})`);
}
