// SPDX-License-Identifier: Apache-2.0
// "Resubmit with changes" (shown only when the daemon runs with --http-allow-submit): a new
// job from this one's command or script, with a new name, GPU count or priority.
import { html, useState } from '../lib/html.js';
import { post } from '../lib/api.js';
import { toast } from '../lib/state.js';
import { ask } from './confirm.js';

export function Resubmit({ job }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState(job.name ? `${job.name}-2` : '');
  const [gpus, setGpus] = useState(job.gpus_requested);
  const [priority, setPriority] = useState(job.priority);
  const [text, setText] = useState(job.script && job.script.text ? job.script.text : job.command);
  if (!open) return html`<p><button onClick=${() => setOpen(true)}>Resubmit with changes…</button></p>`;
  const submit = async (e) => {
    e.preventDefault();
    const body = { gpus: Number(gpus), priority: Number(priority), cwd: job.cwd };
    if (name) body.name = name;
    if (job.script && job.script.text) body.script = { name: job.script.name, text, args: job.script.args || [] };
    else if (Array.isArray(job.argv) && text === job.command) body.argv = job.argv;  // unchanged: the same words
    else body.argv = ['/bin/sh', '-c', text];
    if (!(await ask({ title: 'Submit this job?', text: `${gpus} GPU(s), priority ${priority}, in ${job.cwd}`, confirm: 'Submit' }))) return;
    try {
      const j = await post('/v1/jobs', body);
      toast(`Submitted job ${j.id}`);
      location.hash = `#/job/${j.id}`;
    } catch (err) { toast(`Submit refused: ${err.message}`, { kind: 'error' }); }
  };
  return html`<section class="card"><h2>Resubmit with changes</h2>
    <form class="resubmit" onSubmit=${submit}>
      <label>name <input value=${name} onInput=${(e) => setName(e.target.value)} /></label>
      <label>GPUs <input type="number" min="0" value=${gpus} onInput=${(e) => setGpus(e.target.value)} /></label>
      <label>priority <input type="number" min="0" max="1000" value=${priority} onInput=${(e) => setPriority(e.target.value)} /></label>
      <label class="wide">${job.script ? 'script' : 'command (run by /bin/sh -c)'}
        <textarea rows="8" value=${text} onInput=${(e) => setText(e.target.value)}></textarea></label>
      <div class="buttons"><button type="button" onClick=${() => setOpen(false)}>Close</button><button class="primary">Submit</button></div>
    </form></section>`;
}
