// SPDX-License-Identifier: Apache-2.0
// A confirm dialog (<dialog>, modal) for every action that changes the queue: ask(...)
// resolves true when the person confirms, false when they cancel or press Escape.
import { html, useEffect, useRef, useState } from '../lib/html.js';

let show = null;

export function ask({ title, text, confirm = 'Confirm', danger = false }) {
  return new Promise((resolve) => {
    if (!show) { resolve(window.confirm(`${title}\n${text || ''}`)); return; }
    show({ title, text, confirm, danger, resolve });
  });
}

export function ConfirmHost() {
  const [req, setReq] = useState(null);
  const ref = useRef(null);
  useEffect(() => { show = setReq; return () => { show = null; }; }, []);
  useEffect(() => {
    const d = ref.current;
    if (req && d && !d.open) d.showModal();
  }, [req]);
  const close = (ok) => {
    if (ref.current && ref.current.open) ref.current.close();
    if (req) req.resolve(ok);
    setReq(null);
  };
  return html`<dialog ref=${ref} class="confirm" onCancel=${(e) => { e.preventDefault(); close(false); }}>
    ${req && html`<form method="dialog" onSubmit=${(e) => { e.preventDefault(); close(true); }}>
      <h2>${req.title}</h2>
      ${req.text && html`<p>${req.text}</p>`}
      <div class="buttons">
        <button type="button" onClick=${() => close(false)}>Keep</button>
        <button type="submit" class=${req.danger ? 'danger' : 'primary'} autofocus>${req.confirm}</button>
      </div>
    </form>`}
  </dialog>`;
}
