// The console's shell: sign-in, the workspace being looked at, the navigation, and the
// screen the address names (#/files, #/file?path=..., ...). Every screen is a client of
// the public API (api.js); nothing here is console-only server logic.
import { html, render, useState, useEffect, ErrorBox, link } from './ui.js';
import { session, call, watchEvents, FILES } from './api.js';
import { emit } from './live.js';
import { FilesScreen } from './screens/files.js';
import { FileScreen, NewFileScreen } from './screens/file.js';
import { HistoryScreen } from './screens/history.js';
import { SnapshotsScreen, SnapshotScreen } from './screens/snapshots.js';
import { ChangesScreen } from './screens/changes.js';
import { ForksScreen, ForkScreen } from './screens/forks.js';
import { SessionsScreen, SessionScreen } from './screens/sessions.js';

function route() {
  const hash = window.location.hash.replace(/^#\/?/, '');
  const [screen, query] = hash.split('?');
  return { screen: screen || 'files', params: new URLSearchParams(query || '') };
}

const SCREENS = {
  files: FilesScreen,
  file: FileScreen,
  new: NewFileScreen,
  history: HistoryScreen,
  snapshots: SnapshotsScreen,
  snapshot: SnapshotScreen,
  changes: ChangesScreen,
  forks: ForksScreen,
  fork: ForkScreen,
  sessions: SessionsScreen,
  session: SessionScreen,
};

const NAV = [
  ['files', 'Files'],
  ['changes', 'Changes'],
  ['snapshots', 'Snapshots'],
  ['forks', 'Forks'],
  ['sessions', 'Sessions'],
];

// A credential bound to one workspace lists files without naming one; a tenant-wide one
// answers 400 until X-Workspace-Id names a workspace.
async function probe() {
  try {
    await call('GET', FILES, { query: { limit: 1 } });
    return { ok: true };
  } catch (e) {
    return { ok: false, error: e };
  }
}

function SignIn({ onDone }) {
  const [token, setToken] = useState('');
  const [workspace, setWorkspace] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  async function submit(e) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    session.signIn(token.trim(), workspace.trim());
    const p = await probe();
    setBusy(false);
    if (p.ok || (p.error.status === 400 && !workspace.trim())) {
      onDone(p.ok);
    } else {
      session.signOut();
      setError(p.error);
    }
  }
  return html`<main id="main" class="signin">
    <h1>Agent Workspace</h1>
    <form onSubmit=${submit} aria-labelledby="signin-title">
      <h2 id="signin-title">Sign in</h2>
      <p>Paste an API key or a JWT. It is kept in this tab only (sessionStorage) and sent as the
        Authorization header; it never goes into an address or a cookie.</p>
      <label for="token">API key or token</label>
      <input id="token" type="password" autocomplete="off" required value=${token}
        onInput=${(e) => setToken(e.target.value)} />
      <label for="ws">Workspace (only for a tenant-wide key; optional)</label>
      <input id="ws" type="text" value=${workspace} onInput=${(e) => setWorkspace(e.target.value)} />
      <button type="submit" disabled=${busy}>Sign in</button>
      <${ErrorBox} error=${error} />
    </form>
  </main>`;
}

// A tenant-wide credential picks the workspace it looks at: one of the caller's registered
// workspaces (/workspaces), or any tenant-level name typed in.
function PickWorkspace({ onDone, onCancel }) {
  const [name, setName] = useState('');
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    call('GET', '/workspaces', { query: { limit: 100 }, workspace: '' })
      .then((r) => setList(r.body.workspaces || []), () => setList([]));
  }, []);
  async function open(ws) {
    session.setWorkspace(ws);
    const p = await probe();
    if (p.ok) onDone();
    else { session.setWorkspace(''); setError(p.error); }
  }
  return html`<main id="main" class="signin">
    <h1>Choose a workspace</h1>
    <p>This key reaches every workspace of its tenant: name the one to open.</p>
    <form onSubmit=${(e) => { e.preventDefault(); open(name.trim()); }}>
      <label for="pick">Workspace</label>
      <input id="pick" type="text" required value=${name} onInput=${(e) => setName(e.target.value)} />
      <button type="submit">Open workspace</button>
    </form>
    ${list && list.length > 0 && html`<h2>Your registered workspaces</h2>
      <ul class="plain">${list.map((w) => html`<li><button type="button" class="linkish"
        onClick=${() => open(w.workspaceId)}>${w.workspaceId}</button> <span class="muted">${w.workspaceScope} ${w.localPath || ''}</span></li>`)}</ul>`}
    <${ErrorBox} error=${error} />
    <button type="button" onClick=${onCancel}>Sign out</button>
  </main>`;
}

function Shell({ onSignOut, onSwitch }) {
  const [where, setWhere] = useState(route());
  const [live, setLive] = useState('connecting');
  useEffect(() => {
    const f = () => setWhere(route());
    window.addEventListener('hashchange', f);
    return () => window.removeEventListener('hashchange', f);
  }, []);
  useEffect(() => watchEvents(
    emit,
    (state) => setLive(state),
  ), [session.workspace]);
  useEffect(() => {
    const main = document.getElementById('main');
    if (main && document.activeElement === document.body) main.focus({ preventScroll: true });
  }, [where.screen]);
  const Screen = SCREENS[where.screen];
  const liveText = { live: 'Live: changes show as they happen', retrying: 'Live updates: reconnecting…', unavailable: 'Live updates are not available here', connecting: 'Live updates: connecting…' }[live];
  return html`
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById('main').focus(); }}>Skip to content</a>
    <header class="top">
      <span class="brand">Agent Workspace</span>
      <nav aria-label="Screens"><ul>
        ${NAV.map(([s, label]) => html`<li><a href=${link(s)} aria-current=${where.screen === s ? 'page' : undefined}>${label}</a></li>`)}
      </ul></nav>
      <span class="who">
        <span class="muted">Workspace: </span><span data-testid="workspace">${session.workspace || '(the key\u2019s own)'}</span>
        ${session.workspace && html` <button type="button" class="small" onClick=${onSwitch}>Switch</button>`}
        <span class="muted live" role="status">${liveText}</span>
        <button type="button" onClick=${onSignOut}>Sign out</button>
      </span>
    </header>
    <main id="main" tabindex="-1">
      ${Screen ? html`<${Screen} params=${where.params} key=${window.location.hash} />`
    : html`<h1>Not found</h1><p>No screen called ${where.screen}. <a href=${link('files')}>Files</a></p>`}
    </main>`;
}

function App() {
  const [state, setState] = useState(session.token ? 'checking' : 'signin');
  useEffect(() => {
    if (state !== 'checking') return;
    probe().then((p) => {
      if (p.ok) setState('ready');
      else if (p.error.status === 400 && !session.workspace) setState('pick');
      else { session.signOut(); setState('signin'); }
    });
  }, [state]);
  const signOut = () => { session.signOut(); window.location.hash = ''; setState('signin'); };
  if (state === 'checking') return html`<main id="main"><p>Checking the key…</p></main>`;
  if (state === 'signin') return html`<${SignIn} onDone=${(bound) => setState(bound ? 'ready' : 'pick')} />`;
  if (state === 'pick') return html`<${PickWorkspace} onDone=${() => setState('ready')} onCancel=${signOut} />`;
  return html`<${Shell} onSignOut=${signOut} onSwitch=${() => { session.setWorkspace(''); setState('pick'); }} />`;
}

const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
