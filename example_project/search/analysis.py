"""Text analysis: the tokeniser shared by indexing and querying.

Python documentation is full of identifiers (``check_output``, ``ThreadPoolExecutor``,
``os.path.join``); a developer types the words inside them ("check output", "thread pool"). The
identifier-aware analyser therefore splits snake_case, camelCase and dotted names into their words
and also keeps the joined identifier, so both ``lru cache`` and ``lru_cache`` match
``functools.lru_cache``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Lucene's default English stop set (EnglishAnalyzer / StopAnalyzer, 33 words).
STOPWORDS: frozenset[str] = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)

_WORD = re.compile(r"[A-Za-z0-9_]+")
_IDENTIFIER_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")


def plural_stem(word: str) -> str:
    """Strip an English plural ending: ``files`` -> ``file``, ``directories`` -> ``directory``.

    An inflectional stemmer in the spirit of Harman's S-stemmer (JASIS 1991): only plurals are
    conflated, so ``parse`` and ``parser`` stay apart. Words shorter than four letters are left alone
    (``os``, ``ids``), as are ``-ss``/``-us``/``-is`` endings (``process``, ``status``, ``analysis``).
    """
    if len(word) < 4 or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("shes", "xes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def identifier_parts(word: str) -> list[str]:
    """The lower-cased words of one identifier: ``HTTPSConnection`` -> ``['https', 'connection']``."""
    return [part.lower() for piece in word.split("_") for part in _IDENTIFIER_PART.findall(piece)]


@dataclass(frozen=True)
class Analyzer:
    """A tokeniser configuration.

    ``split_identifiers`` splits snake_case/camelCase/dotted names into words (and keeps the joined
    identifier as well); ``stem`` applies :func:`plural_stem`; stopwords are always removed.
    """

    split_identifiers: bool = True
    stem: bool = True

    def tokens(self, text: str) -> list[str]:
        """The index terms of ``text`` in reading order (repeats kept: they are term frequencies)."""
        terms: list[str] = []
        for word in _WORD.findall(text):
            if not self.split_identifiers:
                pieces = [word.lower()]
            else:
                pieces = identifier_parts(word)
                if len(pieces) > 1:
                    pieces.append("".join(pieces))
            for piece in pieces:
                if piece in STOPWORDS:
                    continue
                terms.append(plural_stem(piece) if self.stem else piece)
        return terms


IDENTIFIER_ANALYZER = Analyzer(split_identifiers=True, stem=True)
PLAIN_ANALYZER = Analyzer(split_identifiers=False, stem=False)
