// The conflict view of a save that lost the race: base (what the person loaded), theirs
// (the head now) and yours (the unsaved text). Where the two changes do not overlap the
// merge is pre-filled; each overlapping block is decided line by line: theirs, yours, both,
// or edited by hand. Then the result is saved against the new head, so a third writer is
// caught the same way. "Overwrite anyway" and "Discard mine" are explicit choices.
import { html, useState, useEffect, ErrorBox, Lines } from '../ui.js';
import { getFile, putFile, ApiError } from '../api.js';

let diff3 = null;
// node-diff3 loads only when a conflict needs it.
async function loadDiff3() {
  if (!diff3) diff3 = await import('../vendor/diff3.js');
  return diff3;
}

function pick(c, choice) {
  if (choice === 'theirs') return c.b.join('\n');
  if (choice === 'yours') return c.a.join('\n');
  if (choice === 'both') return [...c.b, ...c.a].join('\n');
  // Undecided: both sides between markers, so nothing is lost if it is saved as it is.
  return ['<<<<<<< theirs', ...c.b, '=======', ...c.a, '>>>>>>> yours'].join('\n');
}

function Column({ title, lines }) {
  return html`<div class="col"><h4>${title}</h4>${lines.length ? html`<pre>${lines.join('\n')}</pre>` : html`<p class="muted">(no lines)</p>`}</div>`;
}

export function ConflictEditor({ base, theirs: theirs0, yours: yours0, onSaved, onDiscard }) {
  const [sides, setSides] = useState({ base: base.content, theirs: theirs0, yours: yours0 });
  const [blocks, setBlocks] = useState(null);
  const [texts, setTexts] = useState([]);
  const [choices, setChoices] = useState([]);
  const [error, setError] = useState(null);
  const { theirs } = sides;
  const textual = !theirs.deleted && theirs.content !== undefined && !theirs.download;

  useEffect(() => {
    if (!textual) return;
    loadDiff3().then((d) => {
      const merged = d.diff3Merge(sides.yours.split('\n'), sides.base.split('\n'), theirs.content.split('\n'), { excludeFalseConflicts: true });
      setBlocks(merged);
      setChoices(merged.map(() => null));
      setTexts(merged.map((b) => (b.conflict ? pick(b.conflict, null) : null)));
    }, setError);
  }, [sides]);

  const result = blocks && blocks.map((b, i) => (b.ok ? b.ok.join('\n') : texts[i])).join('\n');
  const conflicts = blocks ? blocks.filter((b) => b.conflict).length : 0;
  const undecided = blocks ? blocks.filter((b, i) => b.conflict && !choices[i]).length : 0;

  async function save(text, how) {
    setError(null);
    try {
      const r = theirs.deleted
        ? await putFile(theirs.path, text, { ifNoneMatch: '*', contentType: base.contentType })
        : await putFile(theirs.path, text, { ifMatch: theirs.etag, contentType: base.contentType });
      onSaved(r.body, how);
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) {
        // Someone saved again: merge once more, from the head this view was built on.
        try {
          const next = await getFile(theirs.path);
          setSides({ base: theirs.content ?? '', theirs: next.body, yours: text });
        } catch (e2) { setError(e2); return; }
        setError(new ApiError(409, 'workspace_conflict', 'another save landed meanwhile: the view now merges against it'));
      } else setError(e);
    }
  }

  return html`<section class="conflict" aria-labelledby="conflict-title">
    <h2 id="conflict-title">Conflict: someone else saved ${theirs.deleted ? 'a delete of' : `version ${theirs.version} of`} this file</h2>
    <p>${theirs.deleted ? 'The file was deleted after you opened it.'
    : html`You edited version ${base.version}; version ${theirs.version} is now current (by the change of another writer). Nothing has been overwritten.`}</p>
    ${textual && blocks && html`<p role="status">${conflicts === 0 ? 'Your changes and theirs do not overlap: the merge below has both.' : `${conflicts} block(s) were changed on both sides: choose for each.`}</p>`}
    ${textual && blocks && blocks.map((b, i, all, n = all.slice(0, i + 1).filter((x) => x.conflict).length) => (b.ok ? null : html`<fieldset class="hunk">
      <legend>Conflict ${n}</legend>
      <div class="cols">
        <${Column} title="Base (what you loaded)" lines=${b.conflict.o} />
        <${Column} title="Theirs (saved meanwhile)" lines=${b.conflict.b} />
        <${Column} title="Yours (unsaved)" lines=${b.conflict.a} />
      </div>
      <div class="row" role="radiogroup" aria-label=${`Choice for conflict ${n}`}>
        ${[['theirs', 'Take theirs'], ['yours', 'Take yours'], ['both', 'Take both']].map(([v, label]) => html`<label class="inline">
          <input type="radio" name=${`hunk-${i}`} value=${v} checked=${choices[i] === v}
            onChange=${() => { setChoices(choices.map((c, j) => (j === i ? v : c))); setTexts(texts.map((t, j) => (j === i ? pick(b.conflict, v) : t))); }} /> ${label}</label>`)}
      </div>
      <label for=${`hunk-text-${i}`}>Merged text for this block (edit freely)</label>
      <textarea id=${`hunk-text-${i}`} value=${texts[i]} spellcheck=${false}
        onInput=${(e) => { setTexts(texts.map((t, j) => (j === i ? e.target.value : t))); setChoices(choices.map((c, j) => (j === i ? 'edit' : c))); }}></textarea>
    </fieldset>`))}
    ${textual && blocks && html`<h3>Result</h3><${Lines} text=${result} label="Merged result" />`}
    ${!textual && !theirs.deleted && html`<p>The current version is not text this view can merge: keep one side.</p>`}
    <div class="row">
      ${textual && blocks && html`<button type="button" disabled=${undecided > 0} onClick=${() => save(result, 'merged')}>Save merged</button>`}
      ${undecided > 0 && html`<span class="muted">Choose or edit ${undecided} more block(s) to save the merge.</span>`}
      <button type="button" class="danger" onClick=${() => save(sides.yours, 'overwrite')}>${theirs.deleted ? 'Save mine again' : 'Overwrite anyway'}</button>
      <button type="button" onClick=${onDiscard}>Discard mine</button>
    </div>
    <${ErrorBox} error=${error} />
  </section>`;
}
