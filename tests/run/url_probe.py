"""A pytest plugin for tests/run/test_one_road.py (`-p url_probe`): from its import on, every URL this process
parses (`conformance.peer.url`'s and `urllib.parse`'s urlsplit) is appended to the file named by
$AMQPC_URL_PROBE as "<pid> <url>", one a line. The run's pytest-xdist workers load it as a plugin (they get
the run's -p arguments), so the test sees the parses of every process of the run."""

from __future__ import annotations

import os
import urllib.parse

import conformance.peer.url as url_module

ENV = "AMQPC_URL_PROBE"


def _counting(split):
    if getattr(split, "url_probe", False):            # installed once per process
        return split

    def split_counted(url, *args, **kwargs):
        path = os.environ.get(ENV)
        if path and isinstance(url, str):
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()} {url}\n")
        return split(url, *args, **kwargs)

    split_counted.url_probe = True
    return split_counted


def install(set_attribute=setattr) -> None:
    set_attribute(url_module, "urlsplit", _counting(url_module.urlsplit))
    set_attribute(urllib.parse, "urlsplit", _counting(urllib.parse.urlsplit))


def parses(path, needle: str) -> dict[int, int]:
    """pid -> how many times that process parsed a URL containing `needle`."""
    counts: dict[int, int] = {}
    if os.path.exists(path):
        for line in open(path, encoding="utf-8").read().splitlines():
            pid, url = line.split(" ", 1)
            if needle in url:
                counts[int(pid)] = counts.get(int(pid), 0) + 1
    return counts


if os.environ.get(ENV):
    install()
