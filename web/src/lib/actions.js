// SPDX-License-Identifier: Apache-2.0
// The actions that change the queue, each asked for first: cancel, hold, release, retry, a
// GPU's release from attention, and moves (with an Undo toast built from the job.moved
// event's from_* fields when the daemon sends them, else from what the page knew).
import { post } from './api.js';
import { toast } from './state.js';
import { onEvent } from './live.js';
import { ask } from '../components/confirm.js';
import { jobLabel } from './format.js';

const VERBS = {
  cancel: { title: 'Cancel', text: (j) => (j.state === 'running'
    ? 'Its run is stopped (SIGTERM, then SIGKILL after the grace period).'
    : 'It will not start.'), danger: true },
  hold: { title: 'Hold', text: () => 'It stays in the queue but does not start until released.' },
  release: { title: 'Release', text: () => 'It goes back to waiting in its place.' },
  retry: { title: 'Retry', text: () => 'It is queued again for a new run.' },
};

export async function jobAction(verb, job, after) {
  const v = VERBS[verb];
  const ok = await ask({ title: `${v.title} ${jobLabel(job)} (job ${job.id})?`, text: v.text(job),
    confirm: v.title, danger: !!v.danger });
  if (!ok) return false;
  try {
    await post(`/v1/jobs/${job.id}/${verb}`);
    toast(`${v.title}: ${jobLabel(job)} (job ${job.id})`);
    if (after) after();
    return true;
  } catch (e) {
    toast(`${v.title} refused: ${e.message}`, { kind: 'error' });
    return false;
  }
}

export async function releaseGpu(name, after) {
  const ok = await ask({ title: `Release ${name} from attention?`,
    text: 'Do this once you have checked that the processes listed are gone or harmless: new jobs will be placed on it.',
    confirm: 'Release', danger: true });
  if (!ok) return;
  try {
    await post(`/v1/gpus/${encodeURIComponent(name)}/release`, { attention: true });
    toast(`Released ${name}`);
    if (after) after();
  } catch (e) {
    toast(`Release refused: ${e.message}`, { kind: 'error' });
  }
}

// Moves `job` (where: {before: id} | {after: id} | {top: true} | {bottom: true}). `known` is
// what the page knew before: {priority, after} (the job it followed in serving order, or null).
export async function move(job, where, known, after) {
  let fromEvent = null;
  const off = onEvent((e) => {
    if (e.kind === 'job.moved' && e.job === job.id && e.data && 'from_priority' in e.data) fromEvent = e.data;
  });
  try {
    await post(`/v1/jobs/${job.id}/move`, where);
  } catch (e) {
    off();
    toast(`Move refused: ${e.message}`, { kind: 'error' });
    return;
  }
  if (after) after();
  const undo = async () => {
    off();
    const from = fromEvent
      ? { priority: fromEvent.from_priority, after: fromEvent.from_after ?? null }
      : known;
    try {
      if (from.after == null) {
        await post(`/v1/jobs/${job.id}/move`, { priority: from.priority });
        await post(`/v1/jobs/${job.id}/move`, { top: true });
      } else {
        const moved = await post(`/v1/jobs/${job.id}/move`, { after: from.after });
        if (moved && moved.priority !== from.priority) {
          await post(`/v1/jobs/${job.id}/move`, { priority: from.priority });
        }
      }
      toast(`Moved ${jobLabel(job)} back`);
    } catch (e) {
      toast(`Undo refused: ${e.message}`, { kind: 'error' });
    }
    if (after) after();
  };
  const what = where.top ? 'to the top' : where.bottom ? 'to the bottom'
    : where.before ? `before job ${where.before}` : `after job ${where.after}`;
  toast(`Moved ${jobLabel(job)} ${what}`, { action: { label: 'Undo', run: undo }, ms: 15000 });
  setTimeout(off, 16000);
}
