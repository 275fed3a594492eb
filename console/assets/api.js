// The console's one way to the API: every call carries the credential in `Authorization`
// (never in a URL or a cookie) and the workspace in `X-Workspace-Id` where one is chosen.
// The credential lives in sessionStorage only: it goes with the tab, and "Sign out" forgets it.

const TOKEN = 'agent-workspace.token';
const WORKSPACE = 'agent-workspace.workspace';
const PARENT = 'agent-workspace.parent';

export const session = {
  get token() { return sessionStorage.getItem(TOKEN) || ''; },
  // The workspace named in X-Workspace-Id; empty for a key bound to its own workspace.
  get workspace() { return sessionStorage.getItem(WORKSPACE) || ''; },
  signIn(token, workspace) {
    sessionStorage.setItem(TOKEN, token);
    this.setWorkspace(workspace);
  },
  setWorkspace(workspace) {
    if (workspace) sessionStorage.setItem(WORKSPACE, workspace);
    else sessionStorage.removeItem(WORKSPACE);
  },
  // Looking into a fork: the parent's credential names the fork in X-Workspace-Id.
  get parent() { return sessionStorage.getItem(PARENT); },
  enterFork(forkWorkspace) {
    if (this.parent === null) sessionStorage.setItem(PARENT, this.workspace);
    this.setWorkspace(forkWorkspace);
  },
  leaveFork() {
    const p = this.parent;
    if (p === null) return;
    sessionStorage.removeItem(PARENT);
    this.setWorkspace(p);
  },
  signOut() {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(WORKSPACE);
    sessionStorage.removeItem(PARENT);
  },
};

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export const FILES = '/v1/host/workspace/files';
export const WS = '/v1/host/workspace';

// A file path in a URL: each segment encoded, the slashes kept.
export function pathUrl(base, path) {
  return `${base}/${path.split('/').map(encodeURIComponent).join('/')}`;
}

function withQuery(url, query) {
  if (!query) return url;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `${url}?${s}` : url;
}

export function headers(extra = {}, { workspace = session.workspace } = {}) {
  const h = { Authorization: `Bearer ${session.token}`, ...extra };
  if (workspace) h['X-Workspace-Id'] = workspace;
  return h;
}

async function failure(resp) {
  const text = await resp.text();
  let body = null;
  try { body = JSON.parse(text); } catch { /* not the envelope */ }
  if (body && typeof body.message === 'string') {
    return new ApiError(resp.status, body.error, body.message, body.details);
  }
  return new ApiError(resp.status, `http_${resp.status}`, `${resp.status} ${resp.statusText || 'error'} from ${resp.url}`);
}

// One JSON call. Answers {status, body, etag}; a non-2xx answer throws ApiError with the
// API's own code and message.
export async function call(method, url, { query, body, extra, workspace, signal } = {}) {
  const h = headers(extra || {}, workspace === undefined ? undefined : { workspace });
  let payload;
  if (body !== undefined) {
    h['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(withQuery(url, query), {
      method, headers: h, body: payload, signal, credentials: 'omit', cache: 'no-store',
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', `the server could not be reached (${e.message})`);
  }
  if (!resp.ok) throw await failure(resp);
  const text = await resp.text();
  return { status: resp.status, body: text ? JSON.parse(text) : null, etag: resp.headers.get('ETag') };
}

// The raw bytes of a call (artifacts), with their content type.
export async function callRaw(url, opts = {}) {
  const resp = await fetch(url, { headers: headers({}, opts), credentials: 'omit', cache: 'no-store' });
  if (!resp.ok) throw await failure(resp);
  return { type: resp.headers.get('Content-Type') || '', bytes: new Uint8Array(await resp.arrayBuffer()) };
}

export const getFile = (path, query) => call('GET', pathUrl(FILES, path), { query });

export function putFile(path, content, { ifMatch, ifNoneMatch, contentType, base64 } = {}) {
  const extra = {};
  if (ifMatch) extra['If-Match'] = ifMatch;
  if (ifNoneMatch) extra['If-None-Match'] = ifNoneMatch;
  const body = base64 ? { contentBase64: content } : { content };
  if (contentType) body.contentType = contentType;
  return call('PUT', pathUrl(FILES, path), { body, extra });
}

export function deleteFile(path, ifMatch) {
  return call('DELETE', pathUrl(FILES, path), { extra: ifMatch ? { 'If-Match': ifMatch } : {} });
}

export function newKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// Bytes to base64 and back, for binary files (contentBase64).
export function toBase64(bytesArray) {
  let s = '';
  for (let i = 0; i < bytesArray.length; i += 0x8000) {
    s += String.fromCharCode(...bytesArray.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

export function fromBase64(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i += 1) out[i] = s.charCodeAt(i);
  return out;
}

// PUT of `body` to `url` with progress (fetch reports none for uploads).
function sendWithProgress(method, url, hdrs, body, onProgress) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open(method, url);
    for (const [k, v] of Object.entries(hdrs)) x.setRequestHeader(k, v);
    x.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    x.onload = () => {
      if (x.status >= 200 && x.status < 300) { onProgress(1); resolve(x); return; }
      let err;
      try {
        const b = JSON.parse(x.responseText);
        err = new ApiError(x.status, b.error, b.message, b.details);
      } catch {
        err = new ApiError(x.status, `http_${x.status}`, `the upload was refused (${x.status})`);
      }
      reject(err);
    };
    x.onerror = () => reject(new ApiError(0, 'network', 'the upload could not be sent'));
    x.send(body);
  });
}

// Uploads a File: inline when it fits maxFileBytes, else the two-step upload (declare,
// send the bytes to the URL it answers, commit). `onProgress` gets 0..1.
export async function uploadFile(path, file, maxFileBytes, onProgress, { ifNoneMatch } = {}) {
  const data = new Uint8Array(await file.arrayBuffer());
  const contentType = file.type || 'application/octet-stream';
  const extra = { 'Content-Type': 'application/json' };
  if (ifNoneMatch) extra['If-None-Match'] = ifNoneMatch;
  if (data.length <= maxFileBytes) {
    const text = (() => {
      try { return new TextDecoder('utf-8', { fatal: true }).decode(data); } catch { return null; }
    })();
    const body = text !== null && !text.startsWith('\ufeff')
      ? { content: text, contentType }
      : { contentBase64: toBase64(data), contentType };
    const x = await sendWithProgress('PUT', pathUrl(FILES, path), headers(extra), JSON.stringify(body), onProgress);
    return JSON.parse(x.responseText);
  }
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', data));
  const sha256 = Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  const start = await call('POST', `${WS}/uploads`, { body: { path, size: data.length, sha256, contentType } });
  const up = start.body;
  // The URL is the grant: it carries no credential of ours (S3 on AWS, this server locally).
  // Headers the browser sets itself (Content-Length, Host, ...) cannot be set by a script:
  // XMLHttpRequest refuses them with a console error, so they are left to the browser.
  const hdrs = Object.fromEntries(Object.entries(up.headers || {})
    .filter(([k]) => !['content-length', 'host', 'connection', 'expect'].includes(k.toLowerCase())));
  await sendWithProgress(up.method || 'PUT', up.url, hdrs, data, (p) => onProgress(p * 0.99));
  const commit = await call('PUT', pathUrl(FILES, path), {
    body: { uploadId: up.uploadId }, extra: ifNoneMatch ? { 'If-None-Match': ifNoneMatch } : {},
  });
  onProgress(1);
  return commit.body;
}

// The workspace's event stream (the local server): calls `onEvent(detail)` for each
// `workspace.updated` and resumes after the last id when the connection drops. Fetch, not
// EventSource, because EventSource cannot send the Authorization header. Answers a stop
// function; `onState` hears 'live', 'retrying' or 'unavailable' (e.g. 501 on Lambda).
export function watchEvents(onEvent, onState) {
  const stop = new AbortController();
  let last = null;
  let delay = 500;
  // A first connection replays what the outbox retains: only what happens from now on is news.
  const since = Date.now() - 2000;
  (async () => {
    while (!stop.signal.aborted) {
      try {
        const h = headers({ Accept: 'text/event-stream' });
        if (last) h['Last-Event-ID'] = last;
        const resp = await fetch(`${WS}/events`, { headers: h, signal: stop.signal, credentials: 'omit', cache: 'no-store' });
        if (!resp.ok || !resp.body) {
          const err = await failure(resp);
          if ([401, 403, 404, 405, 501].includes(resp.status)) { onState('unavailable', err); return; }
          throw err;
        }
        onState('live');
        delay = 500;
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            let id = null;
            const data = [];
            for (const line of block.split('\n')) {
              if (line.startsWith('id:')) id = line.slice(3).trim();
              else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
            }
            if (id) last = id;
            if (data.length) {
              let detail = null;
              try { detail = JSON.parse(data.join('\n')).detail; } catch { /* not an event */ }
              if (detail && Date.parse(detail.time) >= since) onEvent(detail);
            }
          }
        }
      } catch (e) {
        if (stop.signal.aborted) return;
        onState('retrying', e);
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 15000);
    }
  })();
  return () => stop.abort();
}
