// The workspace service of agent sessions: the caller's registered workspaces, their
// sessions, a session's history and its artifacts. Everything shown is text.
import { html, useState, useEffect, ErrorBox, when, link, bytes, usePaged, LoadMore } from '../ui.js';
import { call, callRaw } from '../api.js';

const wsUrl = (id, rest = '') => `/workspaces/${encodeURIComponent(id)}${rest}`;

export function SessionsScreen({ params }) {
  const chosen = params.get('ws') || '';
  const [workspaces, setWorkspaces] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    call('GET', '/workspaces', { query: { limit: 100 }, workspace: '' })
      .then((r) => setWorkspaces(r.body.workspaces), setError);
  }, []);
  const sessions = usePaged(async (token) => {
    if (!chosen) return { items: [] };
    const r = await call('GET', wsUrl(chosen, '/sessions'), { query: { limit: 50, nextToken: token }, workspace: '' });
    return { items: r.body.sessions, nextToken: r.body.nextToken };
  }, [chosen]);
  return html`<h1>Sessions</h1>
    <${ErrorBox} error=${error || sessions.error} />
    ${workspaces && html`<table class="list"><caption>Your registered workspaces</caption>
      <thead><tr><th scope="col">Workspace</th><th scope="col">Scope</th><th scope="col">Local path</th><th scope="col">Last active</th></tr></thead>
      <tbody>${workspaces.map((w) => html`<tr><td><a href=${link('sessions', { ws: w.workspaceId })} aria-current=${w.workspaceId === chosen ? 'true' : undefined}>${w.workspaceId}</a></td>
        <td>${w.workspaceScope}</td><td>${w.localPath || ''}</td><td>${when(w.lastActiveAt)}</td></tr>`)}</tbody></table>
      ${!workspaces.length && html`<p>No registered workspaces (POST /workspaces makes one).</p>`}`}
    ${chosen && (sessions.rows.length > 0 || !sessions.loading) && html`<h2>Sessions of ${chosen}</h2>
      <table class="list"><caption>Most recent first</caption>
        <thead><tr><th scope="col">Session</th><th scope="col">Created</th><th scope="col">Last task</th><th scope="col">Tasks</th></tr></thead>
        <tbody>${sessions.rows.map((s) => html`<tr><td><a href=${link('session', { ws: chosen, id: s.sessionId })}>${s.sessionId}</a></td>
          <td>${when(s.createdAt)}</td><td>${when(s.lastTaskAt)}</td><td>${s.taskCount}</td></tr>`)}</tbody></table>
      ${!sessions.rows.length && html`<p>No sessions.</p>`}
      <${LoadMore} list=${sessions} />`}`;
}

function Artifact({ ws, a }) {
  const [shown, setShown] = useState(null);
  const [error, setError] = useState(null);
  async function open() {
    try {
      const r = await callRaw(wsUrl(ws, `/artifacts/${encodeURIComponent(a.artifactId)}`), { workspace: '' });
      let text;
      try { text = new TextDecoder('utf-8', { fatal: true }).decode(r.bytes); } catch { text = null; }
      setShown({ text, size: r.bytes.length, type: r.type });
    } catch (e) { setError(e); }
  }
  return html`<li><button type="button" class="linkish" onClick=${open}>${a.artifactName || a.artifactId}</button>
    <span class="muted"> ${a.artifactType} · ${a.contentType || ''} · ${when(a.createdAt)}</span>
    <${ErrorBox} error=${error} />
    ${shown && (shown.text !== null ? html`<pre class="artifact">${shown.text}</pre>` : html`<p>${bytes(shown.size)} of binary content (${shown.type}).</p>`)}</li>`;
}

export function SessionScreen({ params }) {
  const ws = params.get('ws') || '';
  const id = params.get('id') || '';
  const [history, setHistory] = useState(null);
  const [artifacts, setArtifacts] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    call('GET', wsUrl(ws, `/sessions/${encodeURIComponent(id)}/history`), { workspace: '' })
      .then((r) => setHistory(r.body), (e) => (e.status === 404 ? setHistory({ messages: [] }) : setError(e)));
    call('GET', wsUrl(ws, '/artifacts'), { query: { sessionId: id }, workspace: '' })
      .then((r) => setArtifacts(r.body.artifacts || []), setError);
  }, [ws, id]);
  return html`<h1>Session ${id}</h1>
    <p><a href=${link('sessions', { ws })}>All sessions of ${ws}</a></p>
    <${ErrorBox} error=${error} />
    <h2>History</h2>
    ${history && (history.messages && history.messages.length ? html`<ol class="messages">${history.messages.map((m) => html`<li>
      <p class="muted">${m.role} · ${when(m.timestamp)}</p><pre>${typeof m.content === 'string' ? m.content : JSON.stringify(m.content, null, 2)}</pre></li>`)}</ol>`
    : html`<p>No history recorded.</p>`)}
    <h2>Artifacts</h2>
    ${artifacts && (artifacts.length ? html`<ul class="plain">${artifacts.map((a) => html`<${Artifact} ws=${ws} a=${a} />`)}</ul>` : html`<p>No artifacts.</p>`)}`;
}
