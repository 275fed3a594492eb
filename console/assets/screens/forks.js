// Forks: a private copy of the workspace per sub-agent. List and create them, see what
// changed on each side (the three-way diff), and merge a fork back with a choice per
// conflicting path: the fork's side, the parent's, or the marked-up text edited by hand.
import { html, useState, useEffect, ErrorBox, Notice, when, link, go, usePaged, LoadMore } from '../ui.js';
import { call, WS, session, newKey, ApiError } from '../api.js';

const forkUrl = (id, rest = '') => `${WS}/forks/${encodeURIComponent(id)}${rest}`;

export function ForksScreen() {
  const list = usePaged(async (token) => {
    const r = await call('GET', `${WS}/forks`, { query: { limit: 50, nextToken: token } });
    return { items: r.body.forks, nextToken: r.body.nextToken };
  }, []);
  const [error, setError] = useState(null);
  const [label, setLabel] = useState('');
  async function create(e) {
    e.preventDefault();
    setError(null);
    try {
      const r = await call('POST', `${WS}/forks`, { body: label.trim() ? { label: label.trim() } : {} });
      go('fork', { id: r.body.forkId });
    } catch (err) { setError(err); }
  }
  return html`<h1>Forks</h1>
    ${session.parent !== null && html`<${Notice}>You are looking into a fork. <button type="button" onClick=${() => { session.leaveFork(); window.location.reload(); }}>Back to the parent workspace</button></${Notice}>`}
    <form class="row box" onSubmit=${create} aria-labelledby="fork-title">
      <h2 id="fork-title">Create a fork</h2>
      <label for="fork-label">Fork label</label>
      <input id="fork-label" type="text" value=${label} onInput=${(e) => setLabel(e.target.value)} />
      <button type="submit">Create fork</button>
    </form>
    <${ErrorBox} error=${error || list.error} />
    <table class="list"><caption>Live forks, newest first</caption>
      <thead><tr><th scope="col">Fork</th><th scope="col">Created</th><th scope="col">Expires</th></tr></thead>
      <tbody>${list.rows.map((f) => html`<tr><td><a href=${link('fork', { id: f.forkId })}>${f.label || f.forkId}</a></td>
        <td>${when(f.createdAt)}</td><td>${when(f.expiresAt)}</td></tr>`)}</tbody>
    </table>
    ${!list.loading && !list.rows.length && html`<p>No forks.</p>`}
    <${LoadMore} list=${list} />`;
}

function Resolution({ c, value, onChange }) {
  const id = `res-${c.path}`;
  const choice = typeof value === 'string' ? value : 'edit';
  return html`<fieldset class="hunk">
    <legend>${c.path}${c.binary ? ' (binary)' : ''}</legend>
    <p class="muted">base ${c.base ? `v${c.base.version}` : 'absent'} · fork ${c.fork ? (c.fork.deleted ? 'deleted' : `v${c.fork.version}`) : 'unchanged'} · parent ${c.parent ? (c.parent.deleted ? 'deleted' : `v${c.parent.version}`) : 'unchanged'}</p>
    <div class="row" role="radiogroup" aria-label=${`Resolution for ${c.path}`}>
      <label class="inline"><input type="radio" name=${id} checked=${choice === 'fork'} onChange=${() => onChange('fork')} /> Fork</label>
      <label class="inline"><input type="radio" name=${id} checked=${choice === 'parent'} onChange=${() => onChange('parent')} /> Parent</label>
      ${!c.binary && html`<label class="inline"><input type="radio" name=${id} checked=${choice === 'edit'}
        onChange=${() => onChange({ content: c.merged || '' })} /> Edit</label>`}
    </div>
    ${choice === 'edit' && html`<label for=${`${id}-text`}>Merged text of ${c.path}</label>
      <textarea id=${`${id}-text`} spellcheck=${false} value=${value.content} onInput=${(e) => onChange({ content: e.target.value })}></textarea>`}
  </fieldset>`;
}

export function ForkScreen({ params }) {
  const id = params.get('id') || '';
  const [fork, setFork] = useState(null);
  const [changes, setChanges] = useState(null);
  const [error, setError] = useState(null);
  const [check, setCheck] = useState(null);
  const [resolutions, setResolutions] = useState(new Map());
  const [merged, setMerged] = useState(null);
  const [gone, setGone] = useState(false);
  async function load() {
    setError(null);
    try {
      const [f, d] = await Promise.all([call('GET', forkUrl(id)), call('GET', forkUrl(id, '/diff'), { query: { limit: 100 } })]);
      setFork(f.body);
      setChanges(d.body.changes);
    } catch (e) { setError(e); }
  }
  useEffect(() => { load(); }, [id]);
  function body(dryRun) {
    const res = {};
    for (const [path, v] of resolutions) res[path] = v;
    return { strategy: 'three-way', resolutions: res, dryRun };
  }
  async function dryRun() {
    setError(null);
    setMerged(null);
    try {
      const r = await call('POST', forkUrl(id, '/merge'), { body: body(true) });
      setCheck({ ok: true, applied: r.body.applied });
    } catch (e) {
      if (e instanceof ApiError && e.status === 409 && e.details && e.details.conflicts) {
        const m = new Map(resolutions);
        for (const c of e.details.conflicts) if (!m.has(c.path)) m.set(c.path, c.binary ? 'fork' : { content: c.merged || '' });
        setResolutions(m);
        setCheck({ ok: false, conflicts: e.details.conflicts });
      } else setError(e);
    }
  }
  async function merge() {
    setError(null);
    try {
      const r = await call('POST', forkUrl(id, '/merge'), { body: body(false), extra: { 'Idempotency-Key': newKey() } });
      setMerged(r.body);
      setCheck(null);
      setResolutions(new Map());
      load();
    } catch (e) {
      if (e instanceof ApiError && e.status === 409 && e.details && e.details.conflicts) {
        setCheck({ ok: false, conflicts: e.details.conflicts });
      }
      setError(e);
    }
  }
  async function discard() {
    try { await call('DELETE', forkUrl(id)); setGone(true); } catch (e) { setError(e); }
  }
  function browse() {
    session.enterFork(fork.workspaceId);
    window.location.hash = link('files');
    window.location.reload();
  }
  return html`<h1>Fork ${fork && fork.label ? fork.label : id}</h1>
    <${ErrorBox} error=${error} />
    ${gone && html`<${Notice}>The fork was discarded. <a href=${link('forks')}>Back to forks</a></${Notice}>`}
    ${fork && !gone && html`<p class="muted">${fork.workspaceId} · from ${fork.parentWorkspaceId} · created ${when(fork.createdAt)} · expires ${when(fork.expiresAt)}</p>
      <div class="row actions">
        <button type="button" onClick=${browse}>Browse fork</button>
        <button type="button" onClick=${dryRun}>Check merge</button>
        <button type="button" class="danger" onClick=${discard}>Discard fork</button>
      </div>
      ${merged && html`<${Notice}>Merged: ${merged.applied.length} change(s) applied to the parent.</${Notice}>`}
      ${check && check.ok && html`<section class="box" aria-labelledby="would-title"><h2 id="would-title">The merge would apply</h2>
        ${check.applied.length ? html`<ul class="plain paths">${check.applied.map((a) => html`<li>${a.operation} ${a.path}</li>`)}</ul>` : html`<p>Nothing: the fork has no changes the parent lacks.</p>`}
        <button type="button" onClick=${merge}>Merge</button></section>`}
      ${check && !check.ok && html`<section class="box" aria-labelledby="res-title"><h2 id="res-title">Conflicts to resolve</h2>
        <p>Both sides changed these paths. Choose a side, or edit the text (conflict markers show both).</p>
        ${check.conflicts.map((c) => html`<${Resolution} c=${c} value=${resolutions.get(c.path)}
          onChange=${(v) => { const m = new Map(resolutions); m.set(c.path, v); setResolutions(m); }} />`)}
        <button type="button" onClick=${dryRun}>Check again</button> <button type="button" onClick=${merge}>Merge with these choices</button></section>`}
      <table class="list"><caption>Changed since the fork's base</caption>
        <thead><tr><th scope="col">Path</th><th scope="col">Fork</th><th scope="col">Parent</th><th scope="col">Conflict</th></tr></thead>
        <tbody>${(changes || []).map((c) => html`<tr><td>${c.path}</td><td>${c.fork}</td><td>${c.parent}</td><td>${c.conflict ? 'yes' : ''}</td></tr>`)}</tbody>
      </table>
      ${changes && !changes.length && html`<p>No changes on either side.</p>`}`}`;
}
