// The workspace's change log: who changed what, newest first, filtered by principal, path
// prefix and time.
import { html, useState, useEffect, ErrorBox, when, link, bytes } from '../ui.js';
import { call, WS } from '../api.js';

function iso(local) {
  if (!local) return '';
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

export function ChangesScreen() {
  const [filters, setFilters] = useState({ principal: '', prefix: '', since: '', until: '' });
  const [applied, setApplied] = useState(filters);
  const [rows, setRows] = useState([]);
  const [next, setNext] = useState(null);
  const [error, setError] = useState(null);
  async function load(token, replace, f = applied) {
    setError(null);
    try {
      const r = await call('GET', `${WS}/changes`, {
        query: { principal: f.principal, prefix: f.prefix, since: iso(f.since), until: iso(f.until), limit: 100, nextToken: token },
      });
      setRows(replace ? r.body.changes : [...rows, ...r.body.changes]);
      setNext(r.body.nextToken || null);
    } catch (e) { setError(e); }
  }
  useEffect(() => { load(null, true); }, []);
  const field = (name, label, type = 'text') => html`<label for=${`f-${name}`}>${label}</label>
    <input id=${`f-${name}`} type=${type} value=${filters[name]} onInput=${(e) => setFilters({ ...filters, [name]: e.target.value })} />`;
  return html`<h1>Changes</h1>
    <form class="row box" onSubmit=${(e) => { e.preventDefault(); setApplied(filters); load(null, true, filters); }} aria-label="Filters">
      ${field('principal', 'Principal')}${field('prefix', 'Path prefix')}${field('since', 'Since', 'datetime-local')}${field('until', 'Until', 'datetime-local')}
      <button type="submit">Apply filters</button>
    </form>
    <${ErrorBox} error=${error} />
    <table class="list"><caption>Every committed change, newest first</caption>
      <thead><tr><th scope="col">Time</th><th scope="col">Operation</th><th scope="col">Path</th><th scope="col">Version</th><th scope="col">By</th><th scope="col">Size</th></tr></thead>
      <tbody>${rows.map((c) => html`<tr><td>${when(c.time)}</td><td>${c.operation}</td>
        <td><a href=${link('history', { path: c.path })}>${c.path}</a></td><td>${c.version}</td><td>${c.principal}</td><td>${bytes(c.size)}</td></tr>`)}</tbody>
    </table>
    ${!rows.length && !error && html`<p>No changes match.</p>`}
    ${next && html`<button type="button" onClick=${() => load(next, false)}>Load more</button>`}`;
}
