"""pytest plugin: the suite's command-line options and fixtures (registered through the pytest11 entry point).

Options: --broker (repeatable), --profile, --quiet-period, --frame-timeout, --reports-dir.
"""

from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("amqp-conformance")
    group.addoption("--broker", action="append", default=[], metavar="NAME|URL",
                    help="broker to test: a managed broker name or an amqp[s]:// URL (repeatable)")
    group.addoption("--profile", default=None, metavar="NAME|FILE",
                    help="broker profile for --broker URLs (a profile name or a TOML file)")
    group.addoption("--quiet-period", type=float, default=0.5, metavar="SECONDS",
                    help="how long a case watches that nothing more arrives (default 0.5)")
    group.addoption("--frame-timeout", type=float, default=5.0, metavar="SECONDS",
                    help="bound on every wait for an expected frame (default 5)")
