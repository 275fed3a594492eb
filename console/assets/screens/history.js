// History of one path: every retained version newest first (deleted lineages and erased
// versions included), a diff of any two versions, and restore (a new version, never
// destructive).
import { html, useState, useEffect, ErrorBox, Notice, bytes, when, link } from '../ui.js';
import { call, pathUrl, WS, newKey } from '../api.js';
import { onChange } from '../live.js';

function Diff({ text }) {
  const lines = text.split('\n');
  return html`<div class="lines diff" role="region" aria-label="Diff" tabindex="0"><pre>${lines.map((l) => {
    const cls = l.startsWith('+') && !l.startsWith('+++') ? 'add' : l.startsWith('-') && !l.startsWith('---') ? 'del' : l.startsWith('@@') ? 'hunk' : '';
    return html`<span class=${cls}>${l}\n</span>`;
  })}</pre></div>`;
}

// The rows whose numbers the API's version routes mean: the current lineage, or, when the
// file is deleted, the lineage the delete ended (a restore brings that back).
function currentLineage(rows) {
  const out = new Set();
  let i = rows.length && rows[0].deleted ? 1 : 0;
  for (; i < rows.length && !rows[i].deleted; i += 1) out.add(rows[i]);
  return out;
}

export function HistoryScreen({ params }) {
  const path = params.get('path') || '';
  const [versions, setVersions] = useState([]);
  const [next, setNext] = useState(null);
  const [error, setError] = useState(null);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [diff, setDiff] = useState(null);
  const [done, setDone] = useState(null);
  async function load(token, replace) {
    setError(null);
    try {
      const r = await call('GET', pathUrl(`${WS}/versions`, path), { query: { limit: 100, nextToken: token } });
      const rows = replace ? r.body.versions : [...versions, ...r.body.versions];
      setVersions(rows);
      setNext(r.body.nextToken || null);
      const lineage = currentLineage(rows);
      const live = rows.filter((v) => lineage.has(v) && !v.erased);
      if (replace && live.length) {
        setTo(String(live[0].version));
        setFrom(String(live.length > 1 ? live[1].version : live[0].version));
      }
    } catch (e) { setError(e); }
  }
  useEffect(() => { load(null, true); }, [path]);
  // A new version or a delete by anyone shows up in the list as it happens.
  useEffect(() => onChange((d) => { if (d.path === path) load(null, true); }), [path]);
  async function showDiff(e) {
    e.preventDefault();
    setError(null);
    try {
      const r = await call('GET', pathUrl(`${WS}/diff`, path), { query: { from, to } });
      setDiff(r.body);
    } catch (err) { setError(err); setDiff(null); }
  }
  async function restore(v) {
    setError(null);
    setDone(null);
    try {
      const r = await call('POST', pathUrl(`${WS}/versions`, path), { body: { restore: v }, extra: { 'Idempotency-Key': newKey() } });
      setDone(r.body);
      load(null, true);
    } catch (err) { setError(err); }
  }
  const lineage = currentLineage(versions);
  const choices = versions.filter((v) => lineage.has(v) && !v.erased);
  return html`<h1>History of <span class="path">${path}</span></h1>
    <p><a href=${link('file', { path })}>Open the current version</a></p>
    <${ErrorBox} error=${error} />
    ${done && html`<${Notice}>Restored as version ${done.version}.</${Notice}>`}
    <form class="row box" onSubmit=${showDiff} aria-labelledby="diff-title">
      <h2 id="diff-title">Compare two versions</h2>
      <label for="from">From version</label>
      <select id="from" value=${from} onChange=${(e) => setFrom(e.target.value)}>
        ${choices.map((v) => html`<option value=${v.version}>${v.version}</option>`)}</select>
      <label for="to">To version</label>
      <select id="to" value=${to} onChange=${(e) => setTo(e.target.value)}>
        ${choices.map((v) => html`<option value=${v.version}>${v.version}</option>`)}</select>
      <button type="submit" disabled=${!choices.length}>Show diff</button>
    </form>
    ${diff && (diff.binary ? html`<p>Binary versions: ${diff.diff}</p>`
    : diff.diff ? html`<${Diff} text=${diff.diff} />` : html`<p>Versions ${diff.from} and ${diff.to} are identical.</p>`)}
    <table class="list">
      <caption>Versions, newest first</caption>
      <thead><tr><th scope="col">Version</th><th scope="col">By</th><th scope="col">Size</th><th scope="col">Type</th><th scope="col">Time</th><th scope="col">State</th><th scope="col">Action</th></tr></thead>
      <tbody>${versions.map((v) => html`<tr>
        <td>${lineage.has(v) && !v.erased ? html`<a href=${link('file', { path, version: v.version })}>${v.version}</a>` : v.deleted ? '—' : v.version}</td>
        <td>${v.principal}</td><td>${bytes(v.size)}</td><td>${v.contentType}</td><td>${when(v.updatedAt)}</td>
        <td>${v.erased ? `erased by ${v.erasedBy}` : v.deleted ? 'deleted' : lineage.has(v) ? '' : 'earlier lineage'}</td>
        <td>${lineage.has(v) && !v.erased && html`<button type="button" class="small" onClick=${() => restore(v.version)}
          aria-label=${`Restore version ${v.version}`}>Restore</button>`}</td></tr>`)}</tbody>
    </table>
    ${next && html`<button type="button" onClick=${() => load(next, false)}>Load more</button>`}`;
}
