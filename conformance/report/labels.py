"""How the report names things: a release as people say it, a time to the second, and which columns are brokers
and which are client libraries.

A column's key (`artemis-2.17.0@2.17.0`: the broker label and the version its `open` announced) stays the
model's identity; readers see `Artemis 2.17.0`, `rhea 3.0.5 (JavaScript)`. The model's columns carry `label`,
`series_label`, `subject` and `language` when the history job knows them (conformance.history.analysis); this
module falls back to the names below, then to the product the peer announced, for models that lack them.
Standard library only.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import defaultdict

BROKER, CLIENT = "broker", "client"
SUBJECTS = (BROKER, CLIENT)
SUBJECT_TITLE = {BROKER: "Brokers", CLIENT: "Client libraries"}
SUBJECT_NOUN = {BROKER: ("broker", "brokers"), CLIENT: ("library", "libraries")}

# A release series (or a product as the peer announces it) -> the name people use for it.
NAMES = {
    "artemis": "Artemis", "apache-activemq-artemis": "Artemis",
    "rabbitmq": "RabbitMQ", "RabbitMQ": "RabbitMQ",
    "qpid-broker-j": "Broker-J",
    "qpid-proton-c": "Proton C broker", "qpid-proton-c example broker": "Proton C broker",
    "activemq": "ActiveMQ Classic",
    "qpid-jms": "Qpid JMS",
}


def series_of(column: dict) -> str:
    """The column's release series (its broker label when it has none)."""
    return column.get("series") or column["broker"]


def series_label(column: dict) -> str:
    """`Artemis`, `RabbitMQ`, `rhea`: the series as people name it."""
    if column.get("series_label"):
        return column["series_label"]
    series = series_of(column)
    product = column.get("product") or ""
    if series in NAMES:
        return NAMES[series]
    if ":" in series and product:          # a broker by URL is labelled host:port: its product names it better
        return NAMES.get(product.lower(), product)
    return series


def column_label(column: dict) -> str:
    """`Artemis 2.17.0`, `rhea 3.0.5`: the series' name and the version, once."""
    return column.get("label") or f"{series_label(column)} {column['version']}".strip()


def subject_of(column: dict) -> str:
    return CLIENT if column.get("subject") == CLIENT else BROKER


def sections(model: dict) -> list[tuple[str, list[dict]]]:
    """[(subject, columns)] for the subjects that have columns: brokers first, then client libraries; the columns
    of each in the model's order (series together, oldest release first)."""
    by_subject: dict[str, list[dict]] = defaultdict(list)
    for column in model["columns"]:
        by_subject[subject_of(column)].append(column)
    return [(s, by_subject[s]) for s in SUBJECTS if by_subject[s]]


def series_runs(columns: list[dict]) -> list[tuple[str, list[dict]]]:
    """The columns cut into their series, in order: [(series, [columns oldest first])]."""
    out: list[tuple[str, list[dict]]] = []
    for column in columns:
        if out and out[-1][0] == series_of(column):
            out[-1][1].append(column)
        else:
            out.append((series_of(column), [column]))
    return out


def section_count(subject: str, columns: list[dict]) -> str:
    """"16 releases of 4 brokers", "1 release of 1 library": a section's columns and series, counted."""
    series = len(series_runs(columns))
    noun = SUBJECT_NOUN[subject]
    return (f"{len(columns)} release{'' if len(columns) == 1 else 's'} of {series} "
            f"{noun[0] if series == 1 else noun[1]}")


def when(value: object) -> str:
    """An ISO 8601 time to the second, in UTC: `2026-11-27 14:15:03 UTC`; anything else as it is."""
    text = "" if value is None else str(value)
    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if moment.tzinfo is not None:
        moment = moment.astimezone(_dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if moment.tzinfo is not None else "")


def slug(text: str) -> str:
    """A file-name and fragment-safe form: `2.6.7/3` -> `2.6.7-3`, `artemis-2.17.0@2.17.0` -> `artemis-2.17.0_2.17.0`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text.replace("@", "_")).strip("-") or "x"


class Slugs:
    """Stable, unique slugs for a set of keys (two keys that slug alike get -2, -3 in the order given)."""

    def __init__(self, keys):
        self.of: dict[str, str] = {}
        taken: set[str] = set()
        for key in keys:
            if key in self.of:
                continue
            name = base = slug(key)
            n = 2
            while name.lower() in taken:
                name, n = f"{base}-{n}", n + 1
            taken.add(name.lower())
            self.of[key] = name

    def __getitem__(self, key: str) -> str:
        return self.of[key]

    def __contains__(self, key: str) -> bool:
        return key in self.of
