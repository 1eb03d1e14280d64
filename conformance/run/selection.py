"""Which cases a run runs: one syntax in every command (`run`, `selfcheck`, `bisect`, `bisect-run`, the pytest
plugin's `--case`).

Selectors (positional arguments) name case ids (`2.6.8/1`), sections (`2.6.8`, which includes 2.6.8.x) or
requirement ids (`2.6.7/drain-advance`); an unknown one is UnknownCaseError (exit 3). `-k EXPRESSION` then
keeps the cases it matches: a word matches a case when it occurs, ignoring case, in the case id, its title or
one of its requirement ids; words combine with `and`, `or`, `not` and parentheses, as pytest's -k does
(`-k "drain and not 2.6.8"`). An expression that matches nothing, or does not parse, is a UsageError (exit 2).
Cases come back in catalogue order (section, then number).
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from ..errors import UsageError

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


class Keyword:
    """A compiled -k expression; `matches(case)` says whether the case is kept."""

    def __init__(self, text: str):
        self.text = text
        self._tokens = [m.group(1) for m in _TOKEN.finditer(text)]
        if "".join(self._tokens) != re.sub(r"\s+", "", text):
            raise self._error("cannot read it")
        self._pos = 0
        if not self._tokens:
            raise self._error("it is empty")
        self._predicate = self._or()
        if self._pos != len(self._tokens):
            raise self._error(f"unexpected {self._tokens[self._pos]!r}")

    def matches(self, case) -> bool:
        haystack = " ".join([case.id, case.title, *case.requirements]).lower()
        return self._predicate(haystack)

    # -- a small recursive-descent parser: or := and ("or" and)*; and := not ("and" not)*; not := "not" not | atom

    def _error(self, why: str) -> UsageError:
        return UsageError(f"-k {self.text!r}: {why}; write words joined by and / or / not, with parentheses "
                          "(e.g. -k \"drain and not 2.6.8\")")

    def _peek(self) -> str | None:
        return self._tokens[self._pos] if self._pos < len(self._tokens) else None

    def _take(self) -> str:
        token = self._peek()
        if token is None:
            raise self._error("it ends too early")
        self._pos += 1
        return token

    def _or(self) -> Callable[[str], bool]:
        parts = [self._and()]
        while self._peek() == "or":
            self._take()
            parts.append(self._and())
        return parts[0] if len(parts) == 1 else (lambda s, ps=parts: any(p(s) for p in ps))

    def _and(self) -> Callable[[str], bool]:
        parts = [self._not()]
        while self._peek() == "and":
            self._take()
            parts.append(self._not())
        return parts[0] if len(parts) == 1 else (lambda s, ps=parts: all(p(s) for p in ps))

    def _not(self) -> Callable[[str], bool]:
        if self._peek() == "not":
            self._take()
            inner = self._not()
            return lambda s: not inner(s)
        return self._atom()

    def _atom(self) -> Callable[[str], bool]:
        token = self._take()
        if token == "(":
            inner = self._or()
            if self._take() != ")":
                raise self._error("a parenthesis is not closed")
            return inner
        if token in (")", "and", "or"):
            raise self._error(f"unexpected {token!r}")
        word = token.lower()
        return lambda s: word in s


def select_cases(selectors: Sequence[str] | None = None, keyword: str | None = None, kind: str = "broker") -> list:
    """The CaseSpecs named by `selectors` (all when none) and kept by the -k `keyword` expression (`kind`
    "client": among the client cases)."""
    from ..cases import select
    chosen = select(list(selectors) if selectors else None, kind)
    if keyword:
        expression = Keyword(keyword)
        chosen = [c for c in chosen if expression.matches(c)]
        if not chosen:
            raise UsageError(f"-k {keyword!r} matches no case; run `amqp-conformance list --cases` to see them")
    return chosen


def add_arguments(parser, *, positional: bool = True) -> None:
    """The selection flags every command shares: CASE... (ids, sections, requirement ids) and -k."""
    if positional:
        parser.add_argument("selectors", nargs="*", metavar="CASE",
                            help="case ids (2.6.8/1), sections (2.6.8) or requirement ids (2.6.7/drain-advance); "
                                 "default: all cases")
    parser.add_argument("-k", dest="keyword", default=None, metavar="EXPRESSION",
                        help="keep the cases whose id, title or requirement ids contain these words "
                             "(and / or / not, parentheses; ignoring case), e.g. -k \"drain and not 2.6.8\"")
