// Snapshots and checkpoints: list and create them, browse the workspace as of one, and
// roll back to one after a preview of exactly what would change.
import { html, useState, useEffect, ErrorBox, Notice, when, link, usePaged, LoadMore } from '../ui.js';
import { call, FILES, WS, newKey } from '../api.js';

export function SnapshotsScreen() {
  const list = usePaged(async (token) => {
    const r = await call('GET', `${WS}/snapshots`, { query: { limit: 50, nextToken: token } });
    return { items: r.body.snapshots, nextToken: r.body.nextToken };
  }, []);
  const [error, setError] = useState(null);
  const [label, setLabel] = useState('');
  const [keep, setKeep] = useState(false);
  const [made, setMade] = useState(null);
  async function create(e) {
    e.preventDefault();
    setError(null);
    try {
      const body = {};
      if (label.trim()) body.label = label.trim();
      if (keep) body.keep = true;
      const r = await call('POST', `${WS}/snapshots`, { body });
      setMade(r.body);
      setLabel('');
      list.reload();
    } catch (err) { setError(err); }
  }
  return html`<h1>Snapshots</h1>
    <form class="row box" onSubmit=${create} aria-labelledby="snap-title">
      <h2 id="snap-title">Create a snapshot</h2>
      <label for="snap-label">Label</label>
      <input id="snap-label" type="text" value=${label} onInput=${(e) => setLabel(e.target.value)} />
      <label class="inline"><input type="checkbox" checked=${keep} onChange=${(e) => setKeep(e.target.checked)} /> Keep until deleted</label>
      <button type="submit">Create snapshot</button>
    </form>
    <${ErrorBox} error=${error || list.error} />
    ${made && html`<${Notice}>Snapshot ${made.snapshotId} holds ${made.files.length} file(s).</${Notice}>`}
    <table class="list"><caption>Checkpoints, newest first (run snapshots are listed under their runs)</caption>
      <thead><tr><th scope="col">Snapshot</th><th scope="col">Created</th><th scope="col">Expires</th></tr></thead>
      <tbody>${list.rows.map((s) => html`<tr><td><a href=${link('snapshot', { id: s.snapshotId })}>${s.label || s.snapshotId}</a></td>
        <td>${when(s.createdAt)}</td><td>${s.keep ? 'kept until deleted' : when(s.expiresAt)}</td></tr>`)}</tbody>
    </table>
    ${!list.loading && !list.rows.length && html`<p>No checkpoints yet.</p>`}
    <${LoadMore} list=${list} />`;
}

// Every live file, every page.
async function allLive() {
  const out = new Map();
  let token = null;
  do {
    // eslint-disable-next-line no-await-in-loop
    const r = await call('GET', FILES, { query: { limit: 1000, nextToken: token } });
    for (const f of r.body.files) out.set(f.path, f);
    token = r.body.nextToken || null;
  } while (token);
  return out;
}

export function SnapshotScreen({ params }) {
  const id = params.get('id') || '';
  const [snap, setSnap] = useState(null);
  const [error, setError] = useState(null);
  const [preview, setPreview] = useState(null);
  const [result, setResult] = useState(null);
  const [gone, setGone] = useState(false);
  useEffect(() => {
    call('GET', `${WS}/snapshots/${encodeURIComponent(id)}`).then((r) => setSnap(r.body), setError);
  }, [id]);
  async function showPreview() {
    setError(null);
    try {
      const live = await allLive();
      const held = new Map(snap.files.map((f) => [f.path, f]));
      const restored = [];
      const unchanged = [];
      for (const f of snap.files) {
        const now = live.get(f.path);
        if (now && now.etag === f.etag) unchanged.push(f.path); else restored.push(f.path);
      }
      const deleted = [...live.keys()].filter((p) => !held.has(p));
      setPreview({ restored, deleted, unchanged, at: snap.snapshotId });
    } catch (e) { setError(e); }
  }
  async function restore() {
    setError(null);
    try {
      const r = await call('POST', `${WS}/snapshots/${encodeURIComponent(id)}/restore`, {
        body: {}, extra: { 'Idempotency-Key': newKey() },
      });
      setResult(r.body);
      setPreview(null);
    } catch (e) { setError(e); }
  }
  async function remove() {
    try { await call('DELETE', `${WS}/snapshots/${encodeURIComponent(id)}`); setGone(true); } catch (e) { setError(e); }
  }
  const List = ({ title, paths }) => html`<h3>${title} (${paths.length})</h3>${paths.length ? html`<ul class="plain paths">${paths.map((p) => html`<li>${p}</li>`)}</ul>` : html`<p class="muted">none</p>`}`;
  return html`<h1>Snapshot ${snap && snap.label ? snap.label : id}</h1>
    <${ErrorBox} error=${error} />
    ${gone && html`<${Notice}>The snapshot was deleted. <a href=${link('snapshots')}>Back to snapshots</a></${Notice}>`}
    ${snap && !gone && html`<p class="muted">${snap.snapshotId} · created ${when(snap.createdAt)} · ${snap.expiresAt ? `expires ${when(snap.expiresAt)}` : 'kept until deleted'}</p>
      <div class="row actions">
        <a class="button" href=${link('files', { snapshot: id })}>Browse as of this snapshot</a>
        <button type="button" onClick=${showPreview}>Preview restore</button>
        <button type="button" class="danger" onClick=${remove}>Delete snapshot</button>
      </div>
      ${preview && html`<section class="box" aria-labelledby="preview-title">
        <h2 id="preview-title">Restoring would change</h2>
        <${List} title="Written back" paths=${preview.restored} />
        <${List} title="Deleted (created since)" paths=${preview.deleted} />
        <p class="muted">${preview.unchanged.length} file(s) are unchanged and stay as they are. Each change is a new version: nothing is lost.</p>
        <button type="button" onClick=${restore}>Restore this snapshot</button>
      </section>`}
      ${result && html`<${Notice}>Restored ${result.restored.length}, deleted ${result.deleted.length}, unchanged ${result.unchanged.length}.</${Notice}>`}
      <table class="list"><caption>Files the snapshot holds</caption>
        <thead><tr><th scope="col">Path</th><th scope="col">Version</th></tr></thead>
        <tbody>${snap.files.map((f) => html`<tr><td><a href=${link('file', { path: f.path, snapshot: id })}>${f.path}</a></td><td>${f.version}</td></tr>`)}</tbody>
      </table>`}`;
}
