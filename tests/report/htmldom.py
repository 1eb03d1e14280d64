"""A tiny HTML element collector for the report tests (standard library html.parser).

Collects every start tag with its attributes, classes and the text inside it, and checks that non-void
elements are closed in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
        "circle", "rect", "line", "polyline", "path"}
SELF_CLOSED_OK = {"circle", "rect", "line", "polyline", "path"}


@dataclass
class Element:
    tag: str
    attrs: dict
    parent: "Element | None" = None
    children: list = field(default_factory=list)
    text_parts: list = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class Document(HTMLParser):
    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {})
        self.elements: list[Element] = []
        self.problems: list[str] = []
        self._stack = [self.root]
        self.feed(markup)
        self.close()
        for open_element in self._stack[1:]:
            if open_element.tag not in ("html", "body", "head", "p"):
                self.problems.append(f"<{open_element.tag}> never closed")

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: (v if v is not None else "") for k, v in attrs}, parent=self._stack[-1])
        self._stack[-1].children.append(element)
        self.elements.append(element)
        if tag not in VOID:
            self._stack.append(element)

    def handle_startendtag(self, tag, attrs):
        element = Element(tag, {k: (v if v is not None else "") for k, v in attrs}, parent=self._stack[-1])
        self._stack[-1].children.append(element)
        self.elements.append(element)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if self._stack[-1].tag == tag:
            self._stack.pop()
            return
        self.problems.append(f"</{tag}> closes <{self._stack[-1].tag}>")
        if any(e.tag == tag for e in self._stack):
            while self._stack[-1].tag != tag:
                self._stack.pop()
            self._stack.pop()

    def handle_data(self, data):
        for element in self._stack:
            element.text_parts.append(data)

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs) -> list[Element]:
        found = []
        for element in self.elements:
            if tag and element.tag != tag:
                continue
            if cls and cls not in element.classes:
                continue
            if any(element.attrs.get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            found.append(element)
        return found

    def by_id(self, element_id: str) -> Element | None:
        return next((e for e in self.elements if e.attrs.get("id") == element_id), None)
