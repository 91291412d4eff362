// SPDX-License-Identifier: Apache-2.0
// Builds the dashboard into OUT (argv[2], default ./dist): index.html, app.js (the pages and
// the npm libraries they use, bundled and minified by esbuild) and app.css (ours plus
// uPlot's). No inline script or style anywhere: the daemon serves them under
// Content-Security-Policy "default-src 'self'". Run by CMake (src/web/CMakeLists.txt).
import * as esbuild from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] || join(here, 'dist'));
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

await esbuild.build({
  entryPoints: [join(here, 'src/main.js')],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['chrome110', 'firefox110', 'safari16'],
  outfile: join(out, 'app.js'),
  legalComments: 'none',
  logLevel: 'warning',
});

// CSS: uPlot's, then ours in name order (base.css first).
const styles = join(here, 'src/styles');
const ours = readdirSync(styles).filter((f) => f.endsWith('.css')).sort();
const css = [readFileSync(join(here, 'node_modules/uplot/dist/uPlot.min.css'), 'utf8')]
  .concat(ours.map((f) => readFileSync(join(styles, f), 'utf8')))
  .join('\n');
const minCss = await esbuild.transform(css, { loader: 'css', minify: true });
writeFileSync(join(out, 'app.css'), minCss.code);
writeFileSync(join(out, 'index.html'), readFileSync(join(here, 'src/index.html')));
writeFileSync(join(out, 'favicon.svg'), readFileSync(join(here, 'src/favicon.svg')));
