// SPDX-License-Identifier: Apache-2.0
// Who the page acts as (GET /v1/me, read once at start): the user the session's token belongs
// to, whether that user is an admin, and whether the daemon serves a box's users (--system,
// docs/lab.md). The pages show a job's buttons only where the daemon would let them act: on
// the user's own jobs, or on every job for an admin; a GPU's release only for an admin. A
// single-user daemon's page is its user's, an admin. The daemon decides in the end: a button
// shown in error is refused with 403, which the toast says.
import { getJson } from './api.js';

// Until /v1/me answers (or when a daemon has no /v1/me), act as an admin: the daemon refuses
// what it must.
let me = { user: '', admin: true, system: false };

export async function loadMe() {
  try {
    const m = await getJson('/v1/me');
    me = { user: String(m.user || ''), admin: !!m.admin, system: !!m.system };
  } catch (_) { /* unauthenticated or older: the state or the default says */ }
  return me;
}

export function whoami() { return me; }

// Whether the page may act on `job` (cancel, hold, release, retry, move) and read its log.
export function mayAct(job) {
  return me.admin || (!!job && !!job.user && job.user === me.user);
}

export function isAdmin() { return me.admin; }

// Whether lists name each job's owner: on a box's daemon, where jobs have many owners.
export function showsOwners() { return me.system; }
