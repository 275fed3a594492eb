// The rendering kit every screen imports: Preact with htm (tagged templates, no build
// step, no eval), so every value from the API is put into the page as text, never as markup.
import { h, render, Fragment } from './vendor/preact.js';
import { useState, useEffect, useRef, useCallback, useMemo } from './vendor/preact-hooks.js';
import htm from './vendor/htm.js';

export const html = htm.bind(h);
export { render, Fragment, useState, useEffect, useRef, useCallback, useMemo };

// Sizes as people read them.
export function bytes(n) {
  if (n === undefined || n === null) return '';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

// The error of a failed call, as the API worded it.
export function ErrorBox({ error }) {
  if (!error) return null;
  const code = error.code ? `${error.code}: ` : '';
  return html`<div class="error" role="alert">${code}${error.message || String(error)}</div>`;
}

export function Notice({ children }) {
  return html`<div class="notice" role="status">${children}</div>`;
}

// Runs `fn` when `deps` change, with the loading state and the API's error.
export function useLoad(fn, deps) {
  const [state, setState] = useState({ loading: true, error: null, data: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    fn().then(
      (data) => live && setState({ loading: false, error: null, data }),
      (error) => live && setState({ loading: false, error, data: null }),
    );
    return () => { live = false; };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

// A hash link of the console (#/screen?k=v), with each value encoded.
export function link(screen, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return `#/${screen}${s ? `?${s}` : ''}`;
}

export function go(screen, params) {
  window.location.hash = link(screen, params);
}

// Text with line numbers: one row per line, the number outside the selectable text.
export function Lines({ text, label }) {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return html`<div class="lines" role="region" aria-label=${label} tabindex="0">
    <table><tbody>${lines.map((l, i) => html`<tr><td class="ln" aria-hidden="true">${i + 1}</td><td class="lt">${l}</td></tr>`)}</tbody></table>
  </div>`;
}

// A listing read a page at a time: `fetchPage(token)` answers {items, nextToken}; the
// rows accumulate ("Load more") until the listing says no more follow.
export function usePaged(fetchPage, deps) {
  const [rows, setRows] = useState([]);
  const [next, setNext] = useState(null);
  const [error, setError] = useState(null);
  const [loading, setLoading] = useState(true);
  async function load(token, replace) {
    setLoading(true);
    setError(null);
    try {
      const page = await fetchPage(token);
      setRows((old) => (replace ? page.items : [...old, ...page.items]));
      setNext(page.nextToken || null);
    } catch (e) { setError(e); }
    setLoading(false);
  }
  useEffect(() => { load(null, true); }, deps);
  return { rows, next, error, loading, more: () => load(next, false), reload: () => load(null, true) };
}

export function LoadMore({ list }) {
  return list.next ? html`<button type="button" onClick=${list.more} disabled=${list.loading}>Load more</button>` : null;
}
