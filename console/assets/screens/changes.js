// The workspace's change log: who changed what, newest first, filtered by principal, path
// prefix and time.
import { html, useState, ErrorBox, when, link, bytes, usePaged, LoadMore } from '../ui.js';
import { call, WS } from '../api.js';

function iso(local) {
  if (!local) return '';
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

export function ChangesScreen() {
  const [filters, setFilters] = useState({ principal: '', prefix: '', since: '', until: '' });
  const [applied, setApplied] = useState(filters);
  const list = usePaged(async (token) => {
    const f = applied;
    const r = await call('GET', `${WS}/changes`, {
      query: { principal: f.principal, prefix: f.prefix, since: iso(f.since), until: iso(f.until), limit: 100, nextToken: token },
    });
    return { items: r.body.changes, nextToken: r.body.nextToken };
  }, [applied]);
  const field = (name, label, type = 'text') => html`<label for=${`f-${name}`}>${label}</label>
    <input id=${`f-${name}`} type=${type} value=${filters[name]} onInput=${(e) => setFilters({ ...filters, [name]: e.target.value })} />`;
  return html`<h1>Changes</h1>
    <form class="row box" onSubmit=${(e) => { e.preventDefault(); setApplied({ ...filters }); }} aria-label="Filters">
      ${field('principal', 'Principal')}${field('prefix', 'Path prefix')}${field('since', 'Since', 'datetime-local')}${field('until', 'Until', 'datetime-local')}
      <button type="submit">Apply filters</button>
    </form>
    <${ErrorBox} error=${list.error} />
    <table class="list"><caption>Every committed change, newest first</caption>
      <thead><tr><th scope="col">Time</th><th scope="col">Operation</th><th scope="col">Path</th><th scope="col">Version</th><th scope="col">By</th><th scope="col">Size</th></tr></thead>
      <tbody>${list.rows.map((c) => html`<tr><td>${when(c.time)}</td><td>${c.operation}</td>
        <td><a href=${link('history', { path: c.path })}>${c.path}</a></td><td>${c.version}</td><td>${c.principal}</td><td>${bytes(c.size)}</td></tr>`)}</tbody>
    </table>
    ${!list.loading && !list.rows.length && !list.error && html`<p>No changes match.</p>`}
    <${LoadMore} list=${list} />`;
}
