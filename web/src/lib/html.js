// SPDX-License-Identifier: Apache-2.0
// Preact with htm: `html` tagged templates instead of JSX, so the sources need no compile
// step beyond bundling. Every page and component imports from here.
import { h, render } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
export { h, render };
export { useState, useEffect, useRef, useMemo, useCallback } from 'preact/hooks';
