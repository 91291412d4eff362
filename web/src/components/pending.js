// SPDX-License-Identifier: Apache-2.0
// The pending jobs in serving order, grouped by priority, one page at a time (the daemon
// pages them: pending_limit/pending_offset). Reorder by drag and drop (SortableJS, across
// groups too) or by keyboard: the row's buttons, or Alt+ArrowUp/Down (up/down one place) and
// Alt+Home/End (top/bottom) on a focused row. Each move asks the daemon, then the page reloads.
// Another user's job (on a box's daemon, for a user who is no admin) is read-only: no handle,
// no buttons, no moving keys; it still takes its place among the rows a job is dropped between.
import Sortable from 'sortablejs';
import { html, useEffect, useRef } from '../lib/html.js';
import { move, jobAction } from '../lib/actions.js';
import { mayAct } from '../lib/me.js';
import { dur, priorityName, jobLabel, ms } from '../lib/format.js';

function groups(jobs) {
  const out = [];
  for (const j of jobs) {
    const last = out[out.length - 1];
    if (last && last.priority === j.priority) last.jobs.push(j);
    else out.push({ priority: j.priority, jobs: [j] });
  }
  return out;
}

function eta(job, now) {
  const t = ms(job.eta);
  if (t == null) return null;
  return t <= now ? 'now' : `in ${dur(t - now)}`;
}

function Row({ job, index, list, reload, now }) {
  const prev = list[index - 1] || null;
  const next = list[index + 1] || null;
  const known = { priority: job.priority, after: prev ? prev.id : null };
  const go = (where) => move(job, where, known, reload);
  const mine = mayAct(job);
  const onKey = (e) => {
    if (e.target !== e.currentTarget) return;
    if (!e.altKey || !mine) {
      if (e.key === 'ArrowDown' && e.currentTarget.nextElementSibling) e.currentTarget.nextElementSibling.focus();
      if (e.key === 'ArrowUp' && e.currentTarget.previousElementSibling) e.currentTarget.previousElementSibling.focus();
      return;
    }
    if (e.key === 'ArrowUp' && prev) { e.preventDefault(); go({ before: prev.id }); }
    if (e.key === 'ArrowDown' && next) { e.preventDefault(); go({ after: next.id }); }
    if (e.key === 'Home') { e.preventDefault(); go({ top: true }); }
    if (e.key === 'End') { e.preventDefault(); go({ bottom: true }); }
  };
  const when = eta(job, now);
  return html`<li class=${`pending-row${mine ? '' : ' read-only'}`} data-id=${job.id} tabindex="0" onKeyDown=${onKey}
      aria-label=${`job ${job.id} ${jobLabel(job)}, place ${job.serving_position ?? ''}`}>
    ${mine ? html`<span class="handle" title="drag to reorder" aria-hidden="true">⋮⋮</span>`
      : html`<span class="no-handle" aria-hidden="true">⋮⋮</span>`}
    <span class="pos">${job.serving_position ?? ''}</span>
    <a class="job" href=${`#/job/${job.id}`}>${job.id} ${jobLabel(job)}</a>
    <span class="user">${job.user || ''}</span>
    <span class="gpus">${job.gpus_requested} GPU${job.gpus_requested === 1 ? '' : 's'}</span>
    <span class="reason">${job.reason}</span>
    <span class="eta">${when ? `ETA ${when}` : ''}</span>
    ${mine && html`<span class="moves">
      <button title="to the top (Alt+Home)" aria-label="move to top" onClick=${() => go({ top: true })}>⤒</button>
      <button title="up one (Alt+↑)" aria-label="move up" disabled=${!prev} onClick=${() => go({ before: prev.id })}>↑</button>
      <button title="down one (Alt+↓)" aria-label="move down" disabled=${!next} onClick=${() => go({ after: next.id })}>↓</button>
      <button title="to the bottom (Alt+End)" aria-label="move to bottom" onClick=${() => go({ bottom: true })}>⤓</button>
      <button onClick=${() => jobAction('hold', job, reload)}>Hold</button>
      <button class="danger" onClick=${() => jobAction('cancel', job, reload)}>Cancel</button>
    </span>`}
  </li>`;
}

// While a row is dragged the page must not redraw it (SortableJS holds the DOM): the queue
// page holds its reloads and clock ticks until the drop.
let dragging = false;
export const isDragging = () => dragging;

function Group({ group, list, reload, now }) {
  const ref = useRef(null);
  const current = useRef(list);
  current.current = list;
  useEffect(() => {
    const s = Sortable.create(ref.current, {
      group: 'pending', handle: '.handle', animation: 120, forceFallback: true, fallbackTolerance: 3,
      onStart() { dragging = true; },
      onEnd(evt) {
        dragging = false;
        const list = current.current;
        const { item, from, to, oldIndex, newIndex } = evt;
        if (from === to && oldIndex === newIndex) return;
        // Put the DOM back as Preact rendered it; the reload after the move redraws it.
        item.remove();
        from.insertBefore(item, from.children[oldIndex] || null);
        const id = Number(item.dataset.id);
        const job = list.find((j) => j.id === id);
        const dest = Array.from(to.children).map((c) => Number(c.dataset.id)).filter((x) => x !== id);
        const before = dest[newIndex];
        const afterId = dest[newIndex - 1];
        const pos = list.indexOf(job);
        const known = { priority: job.priority, after: pos > 0 ? list[pos - 1].id : null };
        if (before != null) move(job, { before }, known, reload);
        else if (afterId != null) move(job, { after: afterId }, known, reload);
      },
    });
    return () => { dragging = false; s.destroy(); };
  }, []);
  return html`<section class="prio-group">
    <h3>${priorityName(group.priority)} <span class="muted">(${group.priority})</span></h3>
    <ol class="pending-list" ref=${ref}>
      ${group.jobs.map((j) => html`<${Row} key=${j.id} job=${j} index=${list.indexOf(j)} list=${list} reload=${reload} now=${now} />`)}
    </ol>
  </section>`;
}

export function PendingList({ jobs, total, offset, pageSize, setOffset, reload, now }) {
  if (!jobs.length && !total) return html`<p class="muted empty">No job is waiting.</p>`;
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const page = Math.floor(offset / pageSize) + 1;
  const pager = total > pageSize && html`<div class="pager">
    <button disabled=${offset === 0} onClick=${() => setOffset(0)}>« first</button>
    <button disabled=${offset === 0} onClick=${() => setOffset(Math.max(0, offset - pageSize))}>‹ prev</button>
    <span>${offset + 1}–${Math.min(total, offset + pageSize)} of ${total} (page ${page} of ${pages})</span>
    <button disabled=${page >= pages} onClick=${() => setOffset(offset + pageSize)}>next ›</button>
    <button disabled=${page >= pages} onClick=${() => setOffset((pages - 1) * pageSize)}>last »</button>
  </div>`;
  return html`<div class="pending">${pager}
    ${groups(jobs).map((g) => html`<${Group} key=${`${g.priority}-${g.jobs[0].id}`} group=${g} list=${jobs} reload=${reload} now=${now} />`)}
    ${pager}</div>`;
}
