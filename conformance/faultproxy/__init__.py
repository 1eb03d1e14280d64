"""Checking the checker: a transparent AMQP 1.0 proxy that can break one requirement at a time.

This package owns the fault-injecting proxy (`proxy`: sockets and threads), the fault catalogue (`faults`:
sans-IO frame rewriting, one requirement per fault), the broker handle that routes a case's connections
through the proxy (`handle`), the `selfcheck` run that measures which cases notice which fault
(`selfcheck`) and its command (`cli`).
"""

from .faults import FAULTS, Mutation, Out, mutation_for
from .proxy import MutantProxy, ProxyStats

__all__ = ["FAULTS", "Mutation", "Out", "mutation_for", "MutantProxy", "ProxyStats"]
