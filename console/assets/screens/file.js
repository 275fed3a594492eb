// One file: its text with line numbers (or an image preview, or a download), and safe
// editing: a save names the version the person loaded (If-Match); when someone else saved
// first, the person merges base / theirs / yours and saves against the new head.
import { html, useState, useEffect, ErrorBox, Notice, Lines, bytes, when, link, go } from '../ui.js';
import { getFile, putFile, deleteFile, fromBase64, ApiError } from '../api.js';
import { onChange } from '../live.js';
import { ConflictEditor } from './merge.js';

// Only these are shown as pictures; SVG is markup and shown as its source.
const IMAGES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'image/bmp'];

function mediaType(ct) {
  return String(ct || '').split(';')[0].trim().toLowerCase();
}

function Download({ file }) {
  const [href, setHref] = useState(null);
  useEffect(() => {
    if (file.download) { setHref(file.download.url); return undefined; }
    if (file.contentBase64 === undefined && file.content === undefined) return undefined;
    const data = file.contentBase64 !== undefined ? fromBase64(file.contentBase64) : new TextEncoder().encode(file.content);
    const url = URL.createObjectURL(new Blob([data], { type: 'application/octet-stream' }));
    setHref(url);
    return () => URL.revokeObjectURL(url);
  }, [file.etag]);
  const name = file.path.split('/').pop();
  return href ? html`<a class="button" href=${href} download=${name}>Download</a>` : null;
}

function Preview({ file }) {
  const [src, setSrc] = useState(null);
  const type = mediaType(file.contentType);
  const image = IMAGES.includes(type) && file.contentBase64 !== undefined;
  useEffect(() => {
    if (!image) return undefined;
    const url = URL.createObjectURL(new Blob([fromBase64(file.contentBase64)], { type }));
    setSrc(url);
    return () => URL.revokeObjectURL(url);
  }, [file.etag]);
  if (file.download) {
    return html`<p>This file is ${bytes(file.size)}, over what is answered inline: use Download.</p>`;
  }
  if (image) return src && html`<img class="preview" src=${src} alt=${`Preview of ${file.path}`} />`;
  if (file.content !== undefined) return html`<${Lines} text=${file.content} label="File content" />`;
  return html`<p>Binary content (${bytes(file.size)}, ${file.contentType}): use Download.</p>`;
}

function Editor({ file, onSaved, onCancel }) {
  const [text, setText] = useState(file.content);
  const [error, setError] = useState(null);
  const [conflict, setConflict] = useState(null);
  const [busy, setBusy] = useState(false);
  const dirty = text !== file.content;
  useEffect(() => {
    const warn = (e) => { if (dirty) { e.preventDefault(); e.returnValue = ''; } };
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);
  async function save(e) {
    if (e) e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await putFile(file.path, text, { ifMatch: file.etag, contentType: file.contentType });
      onSaved(r.body);
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        try {
          const theirs = await getFile(file.path);
          setConflict(theirs.body);
        } catch (e2) {
          // Deleted meanwhile: only "save as new" is left.
          setConflict({ deleted: true, path: file.path });
          setError(e2);
        }
      } else setError(err);
    }
    setBusy(false);
  }
  if (conflict) {
    return html`<${ConflictEditor} base=${file} theirs=${conflict} yours=${text}
      onSaved=${onSaved} onDiscard=${() => onCancel(true)} />`;
  }
  return html`<form onSubmit=${save} class="editor">
    <label for="editor">Content of ${file.path} (version ${file.version})</label>
    <textarea id="editor" spellcheck=${false} value=${text} onInput=${(e) => setText(e.target.value)}
      onKeyDown=${(e) => { if ((e.ctrlKey || e.metaKey) && e.key === 's') { e.preventDefault(); save(); } }}></textarea>
    <div class="row">
      <button type="submit" disabled=${busy}>Save</button>
      <button type="button" onClick=${() => onCancel(false)}>Cancel</button>
      <span class="muted">${dirty ? 'Unsaved changes' : 'No changes'}; the save names version ${file.version}, so another writer's change is never overwritten.</span>
    </div>
    <${ErrorBox} error=${error} />
  </form>`;
}

function ConfirmDelete({ file, onDone, onCancel }) {
  const [error, setError] = useState(null);
  async function yes() {
    try { await deleteFile(file.path, file.etag); onDone(); } catch (e) { setError(e); }
  }
  return html`<div class="box confirm" role="group" aria-labelledby="confirm-title">
    <h2 id="confirm-title">Delete ${file.path}?</h2>
    <p>Its history is kept: it can be restored from History.</p>
    <button type="button" class="danger" onClick=${yes} autofocus>Confirm delete</button>
    <button type="button" onClick=${onCancel}>Cancel</button>
    <${ErrorBox} error=${error} />
  </div>`;
}

export function FileScreen({ params }) {
  const path = params.get('path') || '';
  const version = params.get('version') || '';
  const snapshot = params.get('snapshot') || '';
  const [file, setFile] = useState(null);
  const [error, setError] = useState(null);
  const [mode, setMode] = useState('view');
  const [news, setNews] = useState(null);
  const [saved, setSaved] = useState(null);
  async function load() {
    setError(null);
    try {
      const r = await getFile(path, { version, snapshot });
      setFile(r.body);
      setNews(null);
    } catch (e) { setError(e); setFile(null); }
  }
  useEffect(() => { load(); }, [path, version, snapshot]);
  useEffect(() => onChange((d) => {
    if (d.path === path && !version && !snapshot) setNews(d);
  }), [path, version, snapshot]);
  const current = !version && !snapshot;
  const text = file && file.content !== undefined && !file.download;
  const newer = news && file && (news.operation === 'delete' || news.etag !== file.etag);
  return html`<h1 class="path">${path}</h1>
    <p class="muted">${file && html`version ${file.version} · ${bytes(file.size)} · ${file.contentType} · ${when(file.updatedAt)}${file.principal ? ` · by ${file.principal}` : ''}`}
      ${version && ' (a past version)'}${snapshot && ` (as of snapshot ${snapshot})`}</p>
    <${ErrorBox} error=${error} />
    ${newer && html`<${Notice}>Someone else ${news.operation === 'delete' ? 'deleted this file' : `saved version ${news.version}`} (${news.principal}).
      ${mode === 'edit' ? ' Your unsaved text stays here; saving will show both changes to merge.' : html` <button type="button" onClick=${load}>Show the new version</button>`}</${Notice}>`}
    ${saved && html`<${Notice}>Saved as version ${saved.version}.</${Notice}>`}
    ${file && html`<div class="row actions">
      ${current && text && mode === 'view' && html`<button type="button" onClick=${() => { setSaved(null); setMode('edit'); }}>Edit</button>`}
      <a class="button" href=${link('history', { path })}>History</a>
      <${Download} file=${file} />
      ${current && mode === 'view' && html`<button type="button" class="danger" onClick=${() => setMode('delete')}>Delete</button>`}
    </div>`}
    ${file && mode === 'delete' && html`<${ConfirmDelete} file=${file} onDone=${() => go('files', { prefix: path.includes('/') ? path.slice(0, path.lastIndexOf('/') + 1) : '' })} onCancel=${() => setMode('view')} />`}
    ${file && mode === 'edit' && html`<${Editor} file=${file}
      onSaved=${(meta) => { setSaved(meta); setMode('view'); load(); }}
      onCancel=${(reload) => { setMode('view'); if (reload) load(); }} />`}
    ${file && mode !== 'edit' && html`<${Preview} file=${file} />`}`;
}

export function NewFileScreen({ params }) {
  const prefix = params.get('prefix') || '';
  const [path, setPath] = useState(prefix);
  const [text, setText] = useState('');
  const [error, setError] = useState(null);
  async function create(e) {
    e.preventDefault();
    setError(null);
    try {
      await putFile(path.trim(), text, { ifNoneMatch: '*' });
      go('file', { path: path.trim() });
    } catch (err) { setError(err); }
  }
  return html`<h1>New file</h1>
    <form onSubmit=${create} class="editor">
      <label for="new-path">Path</label>
      <input id="new-path" type="text" required value=${path} onInput=${(e) => setPath(e.target.value)} />
      <label for="new-content">Content</label>
      <textarea id="new-content" spellcheck=${false} value=${text} onInput=${(e) => setText(e.target.value)}></textarea>
      <div class="row"><button type="submit">Create</button>
        <a class="button" href=${link('files', { prefix })}>Cancel</a>
        <span class="muted">Created only if no file has this path (If-None-Match: *).</span></div>
      <${ErrorBox} error=${error} />
    </form>`;
}
