// SPDX-License-Identifier: Apache-2.0
// Writes docs/screenshots/{queue,job,timeline,usage,events,fleet}.png from a real daemon
// (fake:4) with a few minutes' worth of real jobs: finished runs of each outcome, running jobs
// (the one on the job page in the second of its three steps) with utilisation (from a fake GPU state file), a GPU held by a foreign process, pending jobs
// with their reasons, a held job. Run by scripts/screenshots.sh. Takes about a minute.
import { writeFileSync, renameSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Daemon, launch, newPage, waitFor } from './harness.mjs';

const out = resolve(dirname(fileURLToPath(import.meta.url)), '../../docs/screenshots');
mkdirSync(out, { recursive: true });
const stateFile = `/tmp/gpuq-shots-gpu-state-${process.pid}.json`;
const writeState = (gpus) => {
  writeFileSync(`${stateFile}.tmp`, JSON.stringify({ gpus }));
  renameSync(`${stateFile}.tmp`, stateFile);
};
writeState([]);

const d = new Daemon({ env: { GPUQ_FAKE_GPU_STATE: stateFile } });
let browser = null;
try {
  await d.start();
  const sh = (script, flags) => d.submit(script, flags);
  // History: a few waves of short runs with each outcome.
  const wave = [];
  for (let i = 0; i < 3; i++) {
    wave.push(sh('sleep 8', ['--gpus', '2', '--name', `prep-${i}`, '--est', '8s']));
    wave.push(sh(`sleep ${5 + 2 * i}; exit ${i === 1 ? 1 : 0}`, ['--gpus', '1', '--name', `eval-${i}`, '--est', '6s']));
    wave.push(sh('sleep 12', ['--gpus', '1', '--name', `sweep-${i}`, '--est', '12s']));
  }
  const doomed = sh('sleep 600', ['--gpus', '1', '--name', 'wrong-lr']);
  d.gpuq(['wait', ...wave.map(String)], { ok: [0, 1] });
  d.gpuq(['cancel', String(doomed)]);
  // Now: three running jobs, a foreign process on gpu3, a queue behind them.
  const train = JSON.parse(d.gpuq(['submit', '--json', '--gpus', '2', '--name', 'train-llama-8b', '--est', '2h',
    '--step', 'bash -c "echo tokenizing; sleep 1"',
    '--step', 'bash -c \'for i in $(seq 1 100000); do echo "step $i loss=$(( (100000 - i) % 997 ))e-4"; sleep 0.2; done\'',
    '--step', 'bash -c "echo evaluating"'])).id;
  sh('while :; do echo tick; sleep 1; done', ['--gpus', '1', '--name', 'eval-harness', '--est', '30m']);
  writeState([{ index: 0, memory_used_mib: 71230, utilization: 97 }, { index: 1, memory_used_mib: 70112, utilization: 94 },
    { index: 2, memory_used_mib: 18020, utilization: 41 },
    { index: 3, memory_used_mib: 2400, utilization: 3, processes: [{ pid: process.pid, used_memory_mib: 2400 }] }]);
  sh('sleep 600', ['--gpus', '4', '--name', 'pretrain-full', '--priority', 'high', '--est', '6h']);
  sh('sleep 600', ['--gpus', '1', '--name', 'ablation-a', '--est', '40m']);
  sh('sleep 600', ['--gpus', '1', '--name', 'ablation-b', '--est', '40m']);
  sh('sleep 600', ['--gpus', '2', '--name', 'finetune-7b', '--priority', 'low', '--est', '3h']);
  sh('sleep 600', ['--gpus', '1', '--name', 'tokenize-shard', '--hold']);
  await waitFor(async () => (await d.api(`/v1/jobs/${train}`)).step === 1, 'training running its second step');
  await waitFor(async () => (await d.api('/v1/status')).resources.some((r) => r.state === 'foreign'), 'gpu3 foreign', 60000);

  // Utilisation samples come at most every 30 s: wait for two, for the job page's sparkline.
  await waitFor(async () => ((await d.api(`/v1/jobs/${train}`)).runs[0].samples || []).length >= 2, 'two samples', 100000)
    .catch(() => console.log('no utilisation samples yet: the job page shows none'));
  browser = await launch();
  const page = await newPage(browser, { width: 1280, height: 860 });
  await page.goto(d.link());
  const shot = async (name, hash, selector, prepare) => {
    await page.goto(`${d.origin}/${hash}`);
    await page.locator(selector).first().waitFor();
    if (prepare) await prepare();
    await page.waitForLoadState('networkidle').catch(() => {});
    await page.screenshot({ path: join(out, `${name}.png`), fullPage: true });
    console.log(`wrote docs/screenshots/${name}.png`);
  };
  await shot('queue', '#/', '.pending-row');
  await shot('job', `#/job/${train}`, 'pre.log-text .line');
  await shot('timeline', '#/timeline', 'svg.gantt rect.run', async () => {
    await page.getByRole('button', { name: '5m', exact: true }).click();
    await page.locator('svg.gantt rect.run').first().waitFor();
  });
  await shot('usage', '#/usage?since=24h', '.usage-page');
  await shot('events', '#/events', 'ul.events li');
  await shot('fleet', '#/fleet', '.fleet-page');
  d.gpuq(['cancel', ...(await d.api('/v1/status?active=1')).jobs.map((j) => String(j.id))]);
} finally {
  if (browser) await browser.close();
  await d.stop();
  rmSync(stateFile, { force: true });
}
