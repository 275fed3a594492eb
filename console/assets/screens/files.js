// Files: the workspace as a tree by prefix (folders from the paths of the loaded pages),
// paged with nextToken however many files there are, a filter over what is loaded, search,
// a new file and uploads.
import { html, useState, useEffect, useRef, ErrorBox, Notice, bytes, when, link, go, usePaged, LoadMore } from '../ui.js';
import { call, FILES, WS, uploadFile } from '../api.js';
import { onChange } from '../live.js';

const PAGE = 200;

// The rows directly under `prefix`: its files, and one folder per next segment.
function entries(files, prefix) {
  const folders = new Map();
  const here = [];
  for (const f of files) {
    const rest = f.path.slice(prefix.length);
    const cut = rest.indexOf('/');
    if (cut >= 0) {
      const name = rest.slice(0, cut);
      const d = folders.get(name) || { name, count: 0 };
      d.count += 1;
      folders.set(name, d);
    } else {
      here.push(f);
    }
  }
  return { folders: [...folders.values()], files: here };
}

function Breadcrumbs({ prefix }) {
  const parts = prefix.split('/').filter(Boolean);
  return html`<nav aria-label="Folder" class="crumbs"><ol>
    <li><a href=${link('files')}>workspace</a></li>
    ${parts.map((p, i) => html`<li><a href=${link('files', { prefix: `${parts.slice(0, i + 1).join('/')}/` })}>${p}</a></li>`)}
  </ol></nav>`;
}

function Search({ prefix }) {
  const [q, setQ] = useState('');
  const [mode, setMode] = useState('keyword');
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  async function run(e) {
    e.preventDefault();
    setError(null);
    try {
      const r = await call('GET', `${WS}/search`, { query: { q, mode, prefix, limit: 20 } });
      setResult(r.body);
    } catch (err) { setError(err); setResult(null); }
  }
  return html`<section aria-labelledby="search-title" class="box">
    <h2 id="search-title">Search</h2>
    <form onSubmit=${run} class="row">
      <label for="q">Search text</label>
      <input id="q" type="search" required value=${q} onInput=${(e) => setQ(e.target.value)} />
      <label for="mode">Mode</label>
      <select id="mode" value=${mode} onChange=${(e) => setMode(e.target.value)}>
        <option value="keyword">words</option><option value="exact">exact text</option><option value="regex">regular expression</option>
        <option value="semantic">by meaning</option><option value="hybrid">words and meaning</option>
      </select>
      <button type="submit">Search</button>
    </form>
    <${ErrorBox} error=${error} />
    ${result && html`<p class="muted">${result.hits.length} hit(s); ${result.index.indexed} of ${result.index.total} files indexed${result.index.pending ? `, ${result.index.pending} pending` : ''}.</p>
      <ol class="hits">${result.hits.map((h) => html`<li>
        <a href=${link('file', { path: h.path, version: h.version })}>${h.path}</a> <span class="muted">version ${h.version}${h.passage ? `, lines ${h.passage.startLine}-${h.passage.endLine}` : ''}</span>
        <ul class="plain">${h.lines.map((l) => html`<li><span class="muted">${l.line}:</span> <code>${l.text}</code></li>`)}</ul>
      </li>`)}</ol>`}
  </section>`;
}

function Upload({ prefix, maxFileBytes, onDone }) {
  const [progress, setProgress] = useState(null);
  const [error, setError] = useState(null);
  const [name, setName] = useState('');
  const input = useRef(null);
  async function send(e) {
    e.preventDefault();
    const file = input.current.files[0];
    if (!file) return;
    const path = (name.trim() || `${prefix}${file.name}`);
    setError(null);
    setProgress(0);
    try {
      await uploadFile(path, file, maxFileBytes, setProgress);
      setProgress(null);
      input.current.value = '';
      setName('');
      onDone(path);
    } catch (err) { setError(err); setProgress(null); }
  }
  return html`<form class="box row" onSubmit=${send} aria-labelledby="upload-title">
    <h2 id="upload-title">Upload</h2>
    <label for="upload-file">File to upload</label>
    <input id="upload-file" type="file" ref=${input} required />
    <label for="upload-path">Save as (path; default: this folder and the file's name)</label>
    <input id="upload-path" type="text" value=${name} onInput=${(e) => setName(e.target.value)} />
    <button type="submit" disabled=${progress !== null}>Upload</button>
    ${progress !== null && html`<label for="upload-progress">Upload progress</label>
      <progress id="upload-progress" max="100" value=${Math.round(progress * 100)}>${Math.round(progress * 100)}%</progress>`}
    <${ErrorBox} error=${error} />
  </form>`;
}

export function FilesScreen({ params }) {
  const prefix = params.get('prefix') || '';
  const snapshot = params.get('snapshot') || '';
  const list = usePaged(async (token) => {
    const r = await call('GET', FILES, { query: { prefix, limit: PAGE, nextToken: token, snapshot } });
    return { items: r.body.files, nextToken: r.body.nextToken };
  }, [prefix, snapshot]);
  const files = list.rows;
  const [filter, setFilter] = useState('');
  const [changed, setChanged] = useState(null);
  const [limits, setLimits] = useState({ maxFileBytes: 1024 * 1024 });

  useEffect(() => {
    call('GET', '/v1/host/capabilities').then((r) => {
      const w = r.body && r.body.workspace;
      if (w && w.maxFileBytes) setLimits(w);
    }, () => {});
  }, []);
  useEffect(() => onChange((d) => {
    if (!snapshot && d.path.startsWith(prefix)) setChanged(d);
  }), [prefix, snapshot]);

  // A change the loaded rows already show is no news: the stream replays the last seconds
  // when it connects, so a write just before the list loaded would be announced again.
  const news = changed && !(changed.operation !== 'delete'
    && files.some((f) => f.path === changed.path && f.etag === changed.etag)) ? changed : null;
  const shown = filter ? files.filter((f) => f.path.toLowerCase().includes(filter.toLowerCase())) : files;
  const { folders, files: here } = entries(shown, prefix);
  return html`<h1>Files${snapshot ? html` <span class="muted">as of snapshot ${snapshot}</span>` : ''}</h1>
    <${Breadcrumbs} prefix=${prefix} />
    ${news && html`<${Notice}>${news.path} was ${news.operation === 'delete' ? 'deleted' : 'changed'} by ${news.principal} (version ${news.version}).
      <button type="button" onClick=${() => { setChanged(null); list.reload(); }}>Refresh the list</button></${Notice}>`}
    <div class="row">
      <label for="filter">Filter loaded files</label>
      <input id="filter" type="text" value=${filter} onInput=${(e) => setFilter(e.target.value)} />
      ${!snapshot && html`<a class="button" href=${link('new', { prefix })}>New file</a>`}
    </div>
    <${ErrorBox} error=${list.error} />
    <table class="list">
      <caption class="sr">Files under ${prefix || 'the workspace root'}</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Version</th><th scope="col">Updated</th><th scope="col">By</th></tr></thead>
      <tbody>
        ${folders.map((d) => html`<tr><td><a href=${link('files', { prefix: `${prefix}${d.name}/`, snapshot })}>${d.name}/</a></td><td class="muted">${d.count} loaded</td><td></td><td></td><td></td></tr>`)}
        ${here.map((f) => html`<tr>
          <td><a href=${link('file', { path: f.path, snapshot })}>${f.path.slice(prefix.length)}</a></td>
          <td>${bytes(f.size)}</td><td>${f.version}</td><td>${when(f.updatedAt)}</td><td>${f.principal || ''}</td></tr>`)}
      </tbody>
    </table>
    ${!list.loading && files.length === 0 && !list.error && html`<p>No files here yet.</p>`}
    <p class="muted" role="status">${list.loading ? 'Loading…' : `${files.length} file(s) loaded${list.next ? '; more follow' : ''}.`}</p>
    <${LoadMore} list=${list} />
    ${!snapshot && html`<${Upload} prefix=${prefix} maxFileBytes=${limits.maxFileBytes} onDone=${(p) => go('file', { path: p })} />`}
    ${!snapshot && html`<${Search} prefix=${prefix} />`}`;
}
