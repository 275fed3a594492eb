"""Words as the keyword index sees them, and the check that a paraphrase query shares no
word with the file it is about.

The keyword index is SQLite FTS5 with `porter unicode61 remove_diacritics 2`: runs of
letters and digits, lowercased, then the Porter stemmer. This reproduces that in plain
Python (Porter's original algorithm, as FTS5's fts5_porter.c implements it), and is
stricter than the index on purpose: a file's words are also split at camelCase humps and
between letters and digits, so "ZipFile" counts as "zip" and "file" too.
"""

import re
import unicodedata

# Words a paraphrase may share with its target: function words that carry no topic.
# Listed so the exemption is explicit; everything else must not appear in the file.
STOP_WORDS = frozenset("""
a an the of to in on at by for from with without into onto as is are was be been being
it its this that these those there and or but if whether not no so than then which
what when where who how do does done can could may might should would will
i me my we our you your they them their he she his her us am
some any each every all more most other such own just only very also
""".split())


def _cons(w, i):
    c = w[i]
    if c in "aeiou":
        return False
    if c == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _m(stem):
    """Porter's measure: the number of vowel-consonant sequences in `stem`."""
    n, i, L = 0, 0, len(stem)
    while i < L and _cons(stem, i):
        i += 1
    while i < L:
        while i < L and not _cons(stem, i):
            i += 1
        if i >= L:
            break
        n += 1
        while i < L and _cons(stem, i):
            i += 1
    return n


def _has_vowel(stem):
    return any(not _cons(stem, i) for i in range(len(stem)))


def _double_cons(w):
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w):
    """Ends consonant-vowel-consonant, the last not w, x or y (e.g. -hop, not -how)."""
    return (len(w) >= 3 and _cons(w, len(w) - 1) and not _cons(w, len(w) - 2)
            and _cons(w, len(w) - 3) and w[-1] not in "wxy")


def _replace(w, rules, min_m):
    """The first rule whose suffix ends `w`: replaced if the stem's measure exceeds
    min_m; either way no later rule is tried."""
    for suf, rep in rules:
        if w.endswith(suf):
            stem = w[: len(w) - len(suf)]
            return stem + rep if _m(stem) > min_m else w
    return w


_STEP2 = [("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
          ("izer", "ize"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
          ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
          ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
          ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log")]
_STEP3 = [("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
          ("ful", ""), ("ness", "")]
_STEP4 = ["al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
          "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize"]


def stem(w):
    """Porter's stemmer (1980) on one lowercase word; anything but a, e, i, o, u and y
    counts as a consonant, digits and other letters too, as in FTS5."""
    if len(w) <= 2 or not w.isalnum():
        return w
    # Step 1a: plurals.
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("ss"):
        pass
    elif w.endswith("s"):
        w = w[:-1]
    # Step 1b: -ed, -ing.
    if w.endswith("eed"):
        if _m(w[:-3]) > 0:
            w = w[:-1]
    else:
        for suf in ("ed", "ing"):
            if w.endswith(suf) and _has_vowel(w[: -len(suf)]):
                w = w[: -len(suf)]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif _double_cons(w) and w[-1] not in "lsz":
                    w = w[:-1]
                elif _m(w) == 1 and _cvc(w):
                    w += "e"
                break
    # Step 1c: y to i.
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _replace(w, _STEP2, 0)
    w = _replace(w, _STEP3, 0)
    # Step 4: drop a suffix when the stem is long enough (-ion only after s or t).
    for suf in _STEP4:
        if w.endswith(suf):
            s = w[: -len(suf)]
            if _m(s) > 1 and (suf != "ion" or s.endswith(("s", "t"))):
                w = s
            break
    # Step 5: final e, double l.
    if w.endswith("e"):
        s = w[:-1]
        if _m(s) > 1 or (_m(s) == 1 and not _cvc(s)):
            w = s
    if _m(w) > 1 and _double_cons(w) and w.endswith("l"):
        w = w[:-1]
    return w


def _fold(s):
    """Lowercase without diacritics (remove_diacritics 2)."""
    s = unicodedata.normalize("NFKD", s.lower())
    return "".join(c for c in s if not unicodedata.combining(c))


def tokens(text):
    """The index's tokens: runs of letters and digits, lowercased (underscores and all
    punctuation separate, as in unicode61)."""
    return [t for t in re.split(r"[\W_]+", _fold(text)) if t]


def file_stems(text):
    """Every stem the file holds, counting camelCase humps and letter/digit runs as words
    too (stricter than the index, which does not split them)."""
    words = set(tokens(text))
    for raw in re.split(r"[^\w]+|_", text):
        for part in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", raw):
            words.add(_fold(part))
    out = set()
    for w in words:
        out.add(w)
        out.add(stem(w))
    return out


def shared_words(query, text):
    """The words of `query` (stop words aside) that the file's text holds, by stem or as
    written. Empty when the query shares no keyword with the text."""
    held = file_stems(text)
    return sorted({w for w in tokens(query)
                   if w not in STOP_WORDS and (w in held or stem(w) in held)})


def fts5_differences(texts):
    """Where these tokens and stems differ from SQLite FTS5's own (the index's tokenizer),
    over `texts`: a list of (token, ours, theirs); None when this Python's sqlite3 has no
    FTS5 to compare with."""
    import sqlite3
    try:
        db = sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    except sqlite3.Error:
        return None
    words = sorted({w for text in texts for w in tokens(text)})
    out = []
    for w in words:
        db.execute("DELETE FROM t")
        db.execute("INSERT INTO t VALUES (?)", (w,))
        theirs = [r[0] for r in db.execute("SELECT term FROM v")]
        if theirs != [stem(w)]:
            out.append((w, stem(w), theirs))
    return out
