"""Extract the document collection from the running interpreter's standard library.

One document per documented public object of a fixed list of well-known modules: the module itself,
its public classes and functions, and the public methods and properties that a class defines itself.
The docno is the dotted name a developer would type (``json.dumps``, ``pathlib.Path.read_text``).

Docstrings change slightly between Python versions and platforms, so the collection is extracted
once and committed (``corpus/stdlib_docs.jsonl`` plus ``corpus/stdlib_docs.meta.json`` recording the
interpreter); the runs and judgments refer to that file, never to a fresh extraction.

    python -m search.build_corpus --out corpus/stdlib_docs.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import platform
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from search.collection import CORPUS_PATH, Document

MODULES: tuple[str, ...] = (
    "builtins",
    "sys",
    "os",
    "os.path",
    "pathlib",
    "shutil",
    "subprocess",
    "json",
    "csv",
    "re",
    "datetime",
    "time",
    "collections",
    "itertools",
    "functools",
    "math",
    "statistics",
    "random",
    "string",
    "textwrap",
    "logging",
    "argparse",
    "typing",
    "dataclasses",
    "enum",
    "hashlib",
    "base64",
    "urllib.parse",
    "urllib.request",
    "http.client",
    "socket",
    "threading",
    "multiprocessing",
    "multiprocessing.pool",
    "concurrent.futures",
    "asyncio",
    "queue",
    "heapq",
    "bisect",
    "copy",
    "pickle",
    "sqlite3",
    "zipfile",
    "tarfile",
    "gzip",
    "tempfile",
    "glob",
    "fnmatch",
    "io",
    "struct",
    "unittest",
    "unittest.mock",
    "contextlib",
    "operator",
    "inspect",
    "uuid",
    "decimal",
    "fractions",
    "secrets",
    "zoneinfo",
    "calendar",
    "difflib",
    "pprint",
    "shlex",
    "traceback",
    "warnings",
    "weakref",
    "html",
    "platform",
)


def _public_names(module: object) -> list[str]:
    # __all__ is the module's own statement of its public API (minus the underscore helpers asyncio
    # lists there); without it, keep the public names the module defines itself, in Python, in its C
    # accelerator (``_bisect``) or in a submodule (``sqlite3.dbapi2``), not what it merely imported.
    declared = getattr(module, "__all__", None)
    if declared is not None:
        return sorted({name for name in declared if not name.startswith("_")})
    home = module.__name__

    def defined_here(value: object) -> bool:
        origin = getattr(value, "__module__", None) or ""
        return origin in (home, "_" + home) or origin.startswith(home + ".")

    return sorted(
        name for name in vars(module) if not name.startswith("_") and defined_here(_public_object(module, name))
    )


def _public_object(module: object, name: str) -> object:
    # Hooks a program may replace (sys.excepthook, threading.excepthook; pytest does both) are
    # documented from the originals their module keeps as ``__name__``.
    original = vars(module).get(f"__{name}__")
    return original if inspect.isroutine(original) else getattr(module, name, None)


def _depends_on_environment(text: str) -> bool:
    # sys.executable too: started as ``../.venv/bin/python`` it is not under the (normalised) prefixes
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable} - {"", None}
    return "<" in text or any(path in text for path in paths)


def _signature(obj: object) -> str:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    parts = []
    for parameter in signature.parameters.values():
        # Default values whose repr holds an address or an environment detail (``<object at 0x..>``,
        # ``<_io.TextIOWrapper name='<stdout>' ...>``, the interpreter's own path) would make the
        # corpus differ from one machine or run to the next.
        if parameter.default is not inspect.Parameter.empty and _depends_on_environment(repr(parameter.default)):
            parameter = parameter.replace(default=inspect.Parameter.empty)
        parts.append(str(parameter.replace(annotation=inspect.Parameter.empty)))
    return "(" + ", ".join(parts) + ")"


def _member_doc(value: object) -> tuple[object, str] | None:
    if isinstance(value, (classmethod, staticmethod)):
        value = value.__func__
    if inspect.isroutine(value) or inspect.isdatadescriptor(value):
        doc = getattr(value, "__doc__", None)
        if isinstance(doc, str) and doc.strip():
            return value, doc
    return None


def _kind(obj: object) -> str:
    if inspect.isclass(obj):
        return "class"
    if inspect.isroutine(obj):
        return "function"
    return "attribute"


def iter_documents(modules: tuple[str, ...] = MODULES) -> Iterator[Document]:
    """Yield the documents of ``modules`` in a fixed order (module order, then names sorted).

    An object reachable under two names (a class re-exported by a second module) is kept once, under
    the first name met, so the collection has no duplicate documents.
    """
    seen: set[int] = set()
    # An id is unique only while its object lives; bound methods that getattr creates on the fly
    # (multiprocessing.Pool) would be freed and their ids reused without this list.
    keep_alive: list[object] = []

    def first_time(obj: object) -> bool:
        if id(obj) in seen:
            return False
        seen.add(id(obj))
        keep_alive.append(obj)
        return True

    for module_name in modules:
        module = importlib.import_module(module_name)
        if module.__doc__ and first_time(module):
            yield Document(module_name, "module", "", inspect.cleandoc(module.__doc__))
        for name in _public_names(module):
            obj = _public_object(module, name)
            if not (inspect.isclass(obj) or inspect.isroutine(obj)):
                continue
            if not first_time(obj):
                continue
            docno = f"{module_name}.{name}"
            doc = obj.__doc__
            if isinstance(doc, str) and doc.strip():
                yield Document(docno, _kind(obj), _signature(obj), inspect.cleandoc(doc))
            # A class without a docstring (http.client.HTTPConnection) may still document its methods.
            if not inspect.isclass(obj):
                continue
            for member_name in sorted(vars(obj)):
                if member_name.startswith("_"):
                    continue
                found = _member_doc(vars(obj)[member_name])
                if found is None or not first_time(found[0]):
                    continue
                member, member_doc = found
                yield Document(
                    f"{docno}.{member_name}", _kind(member), _signature(member), inspect.cleandoc(member_doc)
                )


def write_corpus(out: Path) -> dict[str, object]:
    """Write the collection as JSON lines to ``out`` and its provenance beside it; return the provenance."""
    lines = [json.dumps(asdict(doc), ensure_ascii=False, sort_keys=True) for doc in iter_documents()]
    payload = ("\n".join(lines) + "\n").encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(payload)
    meta = {
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": sys.platform,
        "modules": list(MODULES),
        "documents": len(lines),
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    out.with_suffix(".meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CORPUS_PATH)
    args = parser.parse_args(argv)
    meta = write_corpus(args.out)
    print(
        f"{args.out}: {meta['documents']} documents from Python {meta['python_version']} "
        f"({meta['platform']}), sha256 {meta['sha256'][:12]}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
