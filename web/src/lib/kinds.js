// SPDX-License-Identifier: Apache-2.0
// Every event kind the daemon writes (docs/api.md, "Event"): the event stream names each
// event by its kind, and EventSource hands a named event only to a listener for that name.
export const EVENT_KINDS = [
  'daemon.started', 'daemon.store_error', 'daemon.pruned', 'daemon.stopping', 'daemon.http_failed',
  'daemon.connections_refused',
  'job.submitted', 'job.started', 'job.resumed', 'job.succeeded', 'job.failed', 'job.cancelled',
  'job.failed_run', 'job.timed_out', 'job.retrying', 'job.timeout', 'job.start_failed',
  'job.cancel_requested', 'job.held', 'job.released', 'job.retried', 'job.moved', 'job.skipped',
  'job.blocked', 'job.unblocked', 'job.adopted', 'job.lost', 'job.not_started', 'job.requeued',
  'job.preempt_requested', 'job.preempted', 'job.preemption_withdrawn', 'job.cleanup',
  'job.step_started', 'job.step_finished', 'job.image_pulling', 'job.image_pulled',
  'job.claimed', 'job.reclaimed', 'job.claim_lost', 'job.output_failed', 'job.outputs_unreadable', 'node.stale', 'node.back',
  'node.low_disk', 'node.disk_ok', 'fleet.stopped', 'fleet.state_unsaved',
  'resource.attention', 'resource.released', 'resource.foreign', 'resource.freed',
  'resource.probe_failed', 'resource.probe_recovered', 'queue.drained', 'queue.undrained',
  'job.requires_wait', 'job.quiet', 'job.overdue', 'job.gpu_idle', 'queue.idle_with_work', 'queue.empty',
  'array.submitted', 'array.finished',
];
