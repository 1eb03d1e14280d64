"""Broker profiles: declarative TOML files saying how to address queues, authenticate, and run hooks.

This module owns loading a profile (by name from fixtures/profiles/, or from a user's file) and expanding
its command templates. Commands are argv lists; an element "{rabbitmqctl}" is replaced by the broker's own
argv for that tool (a managed broker knows it; an external broker's profile sets it under [commands]).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError

PROFILES_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "profiles"

HOOK_NAMES = ("memory_alarm", "disk_alarm", "queue_length_limit")


@dataclass
class Profile:
    name: str
    product: str = "unknown"
    source: str = "{queue}"
    target: str = "{queue}"
    existing: str | None = None
    sasl_mechanism: str = "auto"
    queue_create: object = "auto"
    queue_depth: list | None = None
    queue_delete: list | None = None
    hooks: dict = field(default_factory=dict)
    commands: dict = field(default_factory=dict)   # tool name -> argv prefix (external brokers)

    def queue_address(self, queue: str, role: str, *, existing: bool = False) -> str:
        template = self.existing if existing and self.existing else (self.source if role == "source" else self.target)
        return template.format(queue=queue)

    def has_hook(self, name: str) -> bool:
        if name in ("memory_alarm", "disk_alarm"):
            return f"{name}_raise" in self.hooks and f"{name}_clear" in self.hooks
        return name in self.hooks


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.toml"))


def load_profile(name_or_path: str) -> Profile:
    path = Path(name_or_path)
    if not (path.suffix == ".toml" and path.exists()):
        path = PROFILES_DIR / f"{name_or_path}.toml"
    if not path.exists():
        raise UsageError(f"unknown profile {name_or_path!r}; use one of {', '.join(available_profiles())} or a "
                         "path to a .toml profile file")
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"profile {path} is not valid TOML ({exc}); fix the file") from None
    broker = data.get("broker", {})
    addressing = data.get("addressing", {})
    queues = data.get("queues", {})
    return Profile(
        name=path.stem,
        product=broker.get("product", "unknown"),
        source=addressing.get("source", "{queue}"),
        target=addressing.get("target", "{queue}"),
        existing=addressing.get("existing"),
        sasl_mechanism=data.get("sasl", {}).get("mechanism", "auto"),
        queue_create=queues.get("create", "auto"),
        queue_depth=queues.get("depth"),
        queue_delete=queues.get("delete"),
        hooks=dict(data.get("hooks", {})),
        commands=dict(data.get("commands", {})),
    )


def expand(command: list, tools: dict[str, list[str]], **values) -> list[str]:
    """Expand a command template: "{tool}" elements splice in the tool's argv, other {names} format in."""
    argv: list[str] = []
    for part in command:
        key = part[1:-1] if part.startswith("{") and part.endswith("}") else None
        if key is not None and key in tools:
            argv.extend(tools[key])
        else:
            argv.append(_format_erl(part, values))
    return argv


def _format_erl(part: str, values: dict) -> str:
    """Erlang terms contain braces: only replace the known {placeholders}."""
    for key, value in values.items():
        part = part.replace("{" + key + "}", str(value))
    return part
