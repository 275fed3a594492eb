"""The retrieval corpus: one Markdown file per documented public function, class and method
of a fixed list of Python standard library modules, from the docstrings CPython 3.11 ships
(PSF License). Deterministic on CPython 3.11 (same patch release, same platform): a fixed
module list, sorted names, no memory addresses or hash-ordered sets in the text.

  python3.11 bench/semantic/corpus.py             # counts, bytes and a SHA-256 of the corpus
  python3.11 bench/semantic/corpus.py --out DIR   # also writes the files under DIR
"""

import argparse
import hashlib
import inspect
import importlib
import os
import re
import sys
import warnings

# Modules documented (sorted again before use). Chosen to be importable
# on any CPython 3.11 build on Linux without side effects, deprecation warnings or optional
# C libraries that change their content (no sqlite3, ssl, tkinter, curses, ctypes, decimal,
# whose docstrings come from _decimal or _pydecimal depending on the build).
MODULES = """
abc argparse array ast asyncio atexit base64 binascii bisect builtins calendar cmath code
codecs codeop collections collections.abc compileall concurrent.futures configparser
contextlib contextvars copy cProfile csv dataclasses datetime difflib dis doctest
email.generator email.header email.headerregistry email.message email.parser email.policy
email.utils enum faulthandler fcntl filecmp fileinput fnmatch fractions ftplib functools gc
getopt getpass glob graphlib grp heapq hmac html html.parser http.client http.cookiejar
http.cookies http.server imaplib importlib importlib.metadata importlib.resources inspect io
ipaddress itertools json linecache locale logging logging.handlers mailbox math mimetypes
mmap multiprocessing multiprocessing.managers multiprocessing.pool
multiprocessing.shared_memory numbers operator optparse os os.path pathlib pdb pickle
pkgutil platform plistlib poplib pprint profile pstats pty pwd py_compile pyclbr queue
quopri random re reprlib resource runpy sched secrets select selectors shelve shlex shutil
signal smtplib socket socketserver stat statistics string struct subprocess symtable sys
tarfile tempfile termios textwrap threading time timeit tokenize trace traceback types
typing unicodedata unittest unittest.mock urllib.parse urllib.request urllib.robotparser
uuid warnings wave weakref wsgiref.simple_server wsgiref.util xml.dom.minidom
xml.etree.ElementTree xml.sax.handler xml.sax.saxutils xmlrpc.client xmlrpc.server zipapp
zipfile zipimport zoneinfo
""".split()

# Shorter docstrings say too little to be found by meaning. 60, not 80: many of the most used
# functions have one-line docstrings of 60-79 characters (os.path.isdir, os.path.exists).
MIN_DOC = 60
MAX_FILE = 4096       # bytes per file (UTF-8), cut at a line boundary


def _is_documentable(obj):
    return inspect.isclass(obj) or inspect.isroutine(obj)


def _signature(name, obj):
    """`name(params)` or None. Memory addresses (`<function f at 0x7f...>` defaults) are
    cut so the text does not change between runs."""
    try:
        params = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    # A default that is a file's path names this installation (platform.architecture's
    # sys.executable) and differs between machines.
    for p in params.parameters.values():
        if isinstance(p.default, str) and re.match(r"/[^/]+/", p.default):
            return None
    sig = str(params)
    sig = re.sub(r" at 0x[0-9a-fA-F]+", "", sig)
    # A set or frozenset default prints in hash order, which changes between runs.
    if re.search(r"\{'|frozenset\(", sig):
        return None
    return name + sig


def _page(qualname, sig, doc):
    head = f"# {qualname}\n\n"
    if sig:
        head += f"```python\n{sig}\n```\n\n"
    text = head + doc.strip() + "\n"
    if len(text.encode()) > MAX_FILE:
        lines, size = [], 0
        for line in text.splitlines(keepends=True):
            if size + len(line.encode()) > MAX_FILE - 8:   # room for the "…" line
                break
            lines.append(line)
            size += len(line.encode())
        text = "".join(lines).rstrip() + "\n…\n"
    return text


def _identity(obj):
    """The same function reached by two names (an alias, a bound method of a hidden
    instance such as random.randint) is documented once."""
    return id(getattr(obj, "__func__", obj))


def build():
    """{path: text}, sorted by path. Module-level names are taken before class members, so
    a function that is both (random.randint and Random.randint) is filed under the name an
    agent would use."""
    if sys.version_info[:2] != (3, 11):
        print(f"warning: the corpus is defined on CPython 3.11, this is {sys.version.split()[0]}",
              file=sys.stderr)
    modules = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in sorted(MODULES):
            modules.append((name, importlib.import_module(name)))

    seen_obj, seen_doc, files = set(), set(), {}

    def add(module, qualname, obj):
        # The object's own docstring: inspect.getdoc would lend a class without one its
        # base class's, which describes something else.
        doc = getattr(obj, "__doc__", None)
        if not isinstance(doc, str) or len(doc.strip()) < MIN_DOC:
            return
        doc = inspect.cleandoc(doc).strip()
        key = _identity(obj)
        if key in seen_obj or doc in seen_doc:
            return
        seen_obj.add(key)
        seen_doc.add(doc)
        full = f"{module}.{qualname}"
        sig = None if isinstance(obj, property) else _signature(full, obj)
        files[f"stdlib/{module}/{qualname}.md"] = _page(full, sig, doc)

    classes = []
    for mname, mod in modules:
        names = getattr(mod, "__all__", None)
        if names is None:
            names = [n for n in dir(mod) if not n.startswith("_")]
        for n in sorted(set(names)):
            if n.startswith("_"):
                continue
            obj = getattr(mod, n, None)
            if not _is_documentable(obj):
                continue
            # Without __all__, keep only what the module (or its C accelerator, `_name`)
            # defines, not what it imported from elsewhere.
            if not hasattr(mod, "__all__"):
                owner = getattr(obj, "__module__", None) or ""
                if owner.lstrip("_") != mname and owner != mname:
                    continue
            add(mname, n, obj)
            if inspect.isclass(obj):
                classes.append((mname, n, obj))
    for mname, cname, cls in classes:
        for n in sorted(vars(cls)):
            if n.startswith("_"):
                continue
            raw = vars(cls)[n]
            obj = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
            if not (inspect.isroutine(obj) or isinstance(obj, property)):
                continue
            add(mname, f"{cname}.{n}", obj)
    return dict(sorted(files.items()))


def digest(files):
    h = hashlib.sha256()
    for path, text in files.items():
        h.update(path.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the files under this folder")
    a = ap.parse_args()
    files = build()
    if a.out:
        for path, text in files.items():
            full = os.path.join(a.out, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
    size = sum(len(t.encode()) for t in files.values())
    print(f"{len(files)} files, {size:,} bytes, sha256 {digest(files)}")


if __name__ == "__main__":
    main()
