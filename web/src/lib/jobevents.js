// SPDX-License-Identifier: Apache-2.0
// A job's events. /v1/events has no job filter, so find the first event at or after the
// job's submit time by binary search over seq (the log is in time order), then read forward
// (at most `pages` pages of 1000) keeping the job's own.
import { getJson } from './api.js';

async function firstAt(t) {
  const probe = await getJson('/v1/events?after=9007199254740991&limit=1');
  let lo = 0;
  let hi = probe.last_seq || 0;  // the answer is in (lo, hi]
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    const r = await getJson(`/v1/events?after=${mid - 1}&limit=1`);
    const e = r.events[0];
    if (!e || e.time_ms >= t) hi = e ? Math.min(hi, e.seq) : mid;
    else lo = e.seq;
  }
  return lo;
}

export async function jobEvents(job, pages = 10) {
  let after = await firstAt((job.submitted_at_ms || 0) - 1000);
  const out = [];
  for (let i = 0; i < pages; i++) {
    const r = await getJson(`/v1/events?after=${after}&limit=1000`);
    for (const e of r.events) if (e.job === job.id) out.push(e);
    if (r.events.length < 1000) return { events: out, complete: true };
    after = r.events[r.events.length - 1].seq;
  }
  return { events: out, complete: false };
}
