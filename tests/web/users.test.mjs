// SPDX-License-Identifier: Apache-2.0
// The dashboard of a shared box (docs/lab.md, docs/dashboard.md): a real `gpuq daemon --system`
// (root) on fake:4 with users made for the test (alice, bob, and an admin named in [users]
// admins), each submitting through the box's socket and opening their own link (`gpuq
// dashboard` as that user). As alice: her jobs have buttons and a drag handle, bob's have none,
// bob's job page says his log is not hers to read, and the GPU in attention has no release
// button; as the admin: buttons on every job and on that GPU. After `gpuq dashboard --revoke`
// as alice, her page's calls are refused (401). Root only: it adds a group and users (a
// `gpuqt-` prefix and this process's pid), removed afterwards, also on failure; exit 77 (a
// skip) elsewhere.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GPUQ, launch, newPage, check, waitFor, unixGet, pidsWithEnv, alive } from './harness.mjs';

const which = (tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
if (process.getuid() !== 0 || !['useradd', 'userdel', 'groupadd', 'groupdel', 'runuser'].every(which)) {
  console.log('SKIP the shared box\'s dashboard: needs root with useradd, groupadd and runuser (it starts gpuq daemon --system)');
  process.exit(77);
}

const tag = process.pid;
const group = `gpuqt-${tag}`;
const login = { alice: `gpuqt-alice-${tag}`, bob: `gpuqt-bob-${tag}`, admin: `gpuqt-admin-${tag}` };

function sh(cmd, args, { mayFail = false, ...opts } = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 60000, ...opts });
  if (r.status !== 0 && !mayFail) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return r;
}

function uidOf(user) { return Number(sh('id', ['-u', user]).stdout.trim()); }

function pidsOfUid(uid) {
  const out = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      // Real, effective, saved and file-system uid: userdel counts a process by any of them.
      const m = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(readFileSync(`/proc/${p}/status`, 'latin1'));
      if (m && m.slice(1).some((u) => Number(u) === uid)) out.push(Number(p));
    } catch (_) { /* gone */ }
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'gpuq-web-users-'));
chmodSync(dir, 0o755);
const home = join(dir, 'home');
const socket = join(dir, 'run', 'gpuq.sock');  // the daemon makes run/ (0755)
const cliEnv = { PATH: process.env.PATH, HOME: '/nonexistent', GPUQ_SYSTEM_SOCKET: socket };
let gpuq = GPUQ;
let daemonPid = null;
let browser = null;
const made = [];

// gpuq ARGS as USER (root when null), from that user's own directory; returns stdout.
function gpuqAs(user, args) {
  const cwd = user ? join(dir, 'work', user) : dir;
  const r = user
    ? sh('runuser', ['-u', user, '--', 'env', `HOME=${cliEnv.HOME}`, `GPUQ_SYSTEM_SOCKET=${socket}`, gpuq, ...args], { cwd, env: cliEnv })
    : sh(gpuq, args, { cwd, env: cliEnv });
  return r.stdout;
}
const submitAs = (user, script, flags) => JSON.parse(gpuqAs(user, ['submit', '--json', ...flags, '--', 'sh', '-c', script])).id;
const linkOf = (user) => JSON.parse(gpuqAs(user, ['dashboard', '--no-open', '--json'])).url;
const status = () => unixGet(socket, '/v1/status');

// userdel refuses a user who still has a process, a zombie included (this machine's init reaps
// orphans only every few seconds): the user's processes are killed and userdel tried again, for
// up to 30 s; a user still there then fails the test, named, instead of staying on the machine.
async function removeUser(user) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const id = sh('id', ['-u', user], { mayFail: true });
    if (id.status !== 0 && /no such user/i.test(id.stderr || '')) return;  // never made, or gone
    if (id.status === 0) {
      for (const pid of pidsOfUid(Number(id.stdout.trim()))) { try { process.kill(pid, 'SIGKILL'); } catch (_) { /* gone */ } }
      const r = sh('userdel', [user], { mayFail: true });
      if (r.status === 0) return;
      if (Date.now() > deadline) throw new Error(`userdel ${user} kept failing for 30 s (${(r.stderr || '').trim()}): the user is left on this machine`);
    } else if (Date.now() > deadline) {
      throw new Error(`id -u ${user} kept failing for 30 s: ${(id.stderr || '').trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function cleanUp() {
  if (browser) await browser.close().catch(() => {});
  if (daemonPid && alive(daemonPid)) {
    process.kill(daemonPid, 'SIGTERM');
    await waitFor(() => !alive(daemonPid), 'the daemon to exit', 20000).catch(() => process.kill(daemonPid, 'SIGKILL'));
  }
  // The runs (and the process a run left behind on purpose) outlive the daemon: end them, and
  // anything else of the test's users, before their accounts go.
  const left = pidsWithEnv(`GPUQ_RUN_DIR=${home}/`);
  for (const user of made) { try { left.push(...pidsOfUid(uidOf(user))); } catch (_) { /* no such user */ } }
  for (const pid of left) { try { process.kill(pid, 'SIGKILL'); } catch (_) { /* gone */ } }
  await waitFor(() => left.every((p) => !alive(p)), 'the test users\' processes to end', 10000).catch(() => {});
  for (const user of made) {
    try { await removeUser(user); } catch (e) { console.error(`cleanup: ${e.message}`); process.exitCode = 1; }
  }
  const g = sh('groupdel', [group], { mayFail: true });
  if (g.status !== 0 && !/does not exist/.test(g.stderr || '')) {
    console.error(`cleanup: groupdel ${group}: ${(g.stderr || '').trim()}`);
    process.exitCode = 1;
  }
  if (!process.env.GPUQ_KEEP_TEST_DIRS) rmSync(dir, { recursive: true, force: true });
}

try {
  sh('groupadd', [group]);
  for (const user of Object.values(login)) {
    sh('useradd', ['-M', '-N', '-G', group, '-s', '/bin/sh', '-d', '/nonexistent', user]);
    made.push(user);
    const work = join(dir, 'work', user);
    mkdirSync(work, { recursive: true, mode: 0o755 });
    chownSync(work, uidOf(user), Number(sh('id', ['-g', user]).stdout.trim()));
  }
  chmodSync(join(dir, 'work'), 0o755);
  // The users run this build's gpuq: from a copy when they cannot reach the build's, with the
  // gpuqd beside it that it runs for the daemon and every command it does not serve itself.
  if (sh('runuser', ['-u', login.alice, '--', 'test', '-x', gpuq], { mayFail: true }).status !== 0) {
    gpuq = join(dir, 'gpuq');
    copyFileSync(GPUQ, gpuq);
    chmodSync(gpuq, 0o755);
    copyFileSync(join(dirname(GPUQ), 'gpuqd'), join(dir, 'gpuqd'));
    chmodSync(join(dir, 'gpuqd'), 0o755);
  }
  mkdirSync(home, { mode: 0o700 });
  // A run's cleanup that cannot kill what it left puts its GPU in attention within a second.
  writeFileSync(join(home, 'config.toml'), `[users]\ngroup = "${group}"\nadmins = ["${login.admin}"]\n\n`
    + '[cleanup]\npoll = "20ms"\nlimit = "1s"\n\n[runs]\nkill_grace = "30s"\n', { mode: 0o600 });
  sh(gpuq, ['--home', home, 'daemon', '--system', '--detach', '--gpus', 'fake:4', '--http', '127.0.0.1:0'], { cwd: dir, env: cliEnv });
  const health = await waitFor(() => unixGet(socket, '/v1/health'), 'the box\'s daemon to answer');
  daemonPid = health.pid;
  check(health.http && health.http.listen, `the daemon has a TCP listener: ${JSON.stringify(health.http)}`);
  const origin = `http://${health.http.listen}`;

  // bob's first job leaves a process that ignores SIGTERM: its GPU goes into attention.
  submitAs(login.bob, '(setsid sh -c \'trap "" TERM; echo $$ > stray.pid; while :; do sleep 0.1; done\' &) ; '
    + 'while [ ! -s stray.pid ]; do sleep 0.01; done', ['--gpus', '1', '--name', 'bob-leaver']);
  await waitFor(async () => (await status()).resources.some((r) => r.state === 'attention'), 'a GPU in attention', 60000);
  const aliceRun = submitAs(login.alice, 'echo hello from alice; sleep 600', ['--gpus', '1', '--name', 'alice-train']);
  const bobRun = submitAs(login.bob, 'echo hello from bob; sleep 600', ['--gpus', '1', '--name', 'bob-train']);
  submitAs(login.bob, 'sleep 600', ['--gpus', '1', '--name', 'bob-eval']);
  await waitFor(async () => (await status()).jobs.filter((j) => j.state === 'running').length === 3, 'three jobs running');
  const aliceWait = submitAs(login.alice, 'sleep 600', ['--gpus', '1', '--name', 'alice-wait']);
  const bobWait = submitAs(login.bob, 'sleep 600', ['--gpus', '1', '--name', 'bob-wait']);
  const aliceHeld = submitAs(login.alice, 'sleep 600', ['--gpus', '1', '--name', 'alice-held', '--hold']);
  const bobHeld = submitAs(login.bob, 'sleep 600', ['--gpus', '1', '--name', 'bob-held', '--hold']);

  browser = await launch();

  // alice: her jobs' buttons, none on bob's.
  const alice = await newPage(browser);
  await alice.goto(linkOf(login.alice));
  await alice.locator(`.pending-row[data-id="${aliceWait}"]`).getByRole('button', { name: 'Hold' }).waitFor();
  check((await alice.locator('header.top .whoami').innerText()).trim() === login.alice, 'the header names alice, no admin');
  const bobRow = alice.locator(`.pending-row[data-id="${bobWait}"]`);
  await bobRow.waitFor();
  check(await alice.locator(`.pending-row[data-id="${aliceWait}"] .handle`).count() === 1, 'alice may drag her job');
  check(await bobRow.locator('button').count() === 0, 'no buttons on bob\'s pending job');
  check(await bobRow.locator('.handle').count() === 0, 'bob\'s pending job cannot be dragged');
  check((await bobRow.locator('.user').innerText()).includes(login.bob), 'bob\'s pending job names him');
  await alice.locator(`li.row[data-id="${aliceHeld}"]`).getByRole('button', { name: 'Release' }).waitFor();
  const bobHeldRow = alice.locator(`li.row[data-id="${bobHeld}"]`);
  check(await bobHeldRow.locator('button').count() === 0, 'no buttons on bob\'s held job');
  check((await bobHeldRow.innerText()).includes(login.bob), 'bob\'s held job names him');
  const attention = alice.locator('tr.gpu.state-attention');
  await attention.waitFor();
  check(await attention.locator('button').count() === 0, 'no release from attention for alice');
  // Her buttons act: holding her pending job holds it in the daemon.
  await alice.locator(`.pending-row[data-id="${aliceWait}"]`).getByRole('button', { name: 'Hold' }).click();
  await alice.locator('dialog.confirm[open]').getByRole('button', { name: 'Hold' }).click();
  await waitFor(async () => (await unixGet(socket, `/v1/jobs/${aliceWait}`)).state === 'held', 'alice\'s job held');
  // What the page does not offer, the daemon refuses anyway.
  const refused = await alice.evaluate(async (id) => (await fetch(`/v1/jobs/${id}/hold`,
    { method: 'POST', headers: { 'X-Gpuq-Csrf': '1', 'Content-Type': 'application/json' }, body: '{}' })).status, bobWait);
  check(refused === 403, `holding bob's job from alice's page is refused (${refused})`);

  // bob's job page, as alice: whose it is, no actions, no log.
  await alice.goto(`${origin}/#/job/${bobRun}`);
  await alice.locator('.log-refused').waitFor();
  check((await alice.locator('.log-refused').innerText()).includes(`only ${login.bob} or an admin may read its log`),
    `the log area says whose it is: ${await alice.locator('.log-refused').innerText()}`);
  check((await alice.locator('.title-row .owner').innerText()).includes(`submitted by ${login.bob}`), 'the owner is shown');
  check(await alice.locator('.title-row button').count() === 0, 'no actions on bob\'s job page');
  check(await alice.locator('pre.log-text').count() === 0, 'no log view on bob\'s job page');
  // Her own job's page: its actions and its log.
  await alice.goto(`${origin}/#/job/${aliceRun}`);
  await alice.locator('pre.log-text .line', { hasText: 'hello from alice' }).waitFor();
  await alice.locator('.title-row').getByRole('button', { name: 'Cancel' }).waitFor();
  check((await alice.locator('.title-row .owner').innerText()).includes(`submitted by ${login.alice}`), 'her own job names her');
  check(alice.problems.length === 0, alice.problems.join('\n'));

  // The admin: buttons on every job, and on the GPU in attention.
  const admin = await newPage(browser);
  await admin.goto(linkOf(login.admin));
  const adminBobRow = admin.locator(`.pending-row[data-id="${bobWait}"]`);
  await adminBobRow.getByRole('button', { name: 'Cancel' }).waitFor();
  check(await adminBobRow.locator('.handle').count() === 1, 'the admin may drag bob\'s job');
  check((await admin.locator('header.top .whoami').innerText()).trim() === `${login.admin} (admin)`, 'the header says admin');
  await admin.locator(`li.row[data-id="${bobHeld}"]`).getByRole('button', { name: 'Release' }).waitFor();
  await admin.locator('tr.gpu.state-attention').getByRole('button', { name: 'Release…' }).waitFor();
  await admin.goto(`${origin}/#/job/${bobRun}`);
  await admin.locator('pre.log-text .line', { hasText: 'hello from bob' }).waitFor();
  await admin.locator('.title-row').getByRole('button', { name: 'Cancel' }).waitFor();
  check(admin.problems.length === 0, admin.problems.join('\n'));

  // alice revokes her link: her open page's next call (the queue's reload on an event) is
  // refused and it says so; the admin's page is still answered.
  await alice.goto(`${origin}/#/`);
  await alice.locator(`.pending-row[data-id="${bobWait}"]`).waitFor();
  gpuqAs(login.alice, ['dashboard', '--revoke']);
  submitAs(null, 'sleep 600', ['--gpus', '1', '--name', 'root-after-revoke', '--hold']);
  await alice.getByRole('heading', { name: 'Not signed in' }).waitFor();
  const after = await alice.evaluate(async () => (await fetch('/v1/me')).status);
  check(after === 401, `alice's page is refused after --revoke (${after})`);
  const adminAfter = await admin.evaluate(async () => (await fetch('/v1/me')).status);
  check(adminAfter === 200, `the admin's page still answered (${adminAfter})`);
  console.log('PASS the shared box\'s dashboard acts with each user\'s rights');
} catch (e) {
  console.error(`FAIL the shared box's dashboard: ${e.stack || e}`);
  console.error(`test directory: ${dir}`);
  process.exitCode = 1;
} finally {
  await cleanUp().catch((e) => { console.error(`cleanup: ${e}`); process.exitCode = 1; });
}
