"""Exploring flow scripts against a broker with the flow-control model as the judge (`receiver`), and the
`replay` command that runs a saved reproducer again (`cli`)."""

from .receiver import ReceiverExplorer, Violated, replay, reproducers_dir, save_reproducer

__all__ = ["ReceiverExplorer", "Violated", "replay", "reproducers_dir", "save_reproducer"]
