"""Broker profiles: declarative TOML files saying how to address queues, authenticate, and run hooks.

This module owns loading and validating a profile (by name from fixtures/profiles/, or a user's own file)
and the `Action` values it is made of. It never runs anything: `handle.BrokerHandle` runs actions.

An action is one of
- a command: an argv list. An element "{rabbitmqctl}" (any name under [commands] or a tool a managed
  broker provides) splices in that tool's argv; other "{name}" placeholders are filled from parameters;
- an AMQP management call: `{ amqp_management = { method = "PUT", path = "/queues/{queue}", body = {...} } }`
  (RabbitMQ 4's HTTP-over-AMQP node `/management`; needs nothing but the AMQP connection);
- an HTTP management call: `{ http = { method = "POST", path = "/api/latest/queue/{queue}", body = {...} } }`
  against the tool named "http": its first element is the base URL (credentials may be in it), the others
  `key=value` settings (`password_env=NAME` takes the password from that environment variable; any other key
  fills `{key}` in path and body). A managed broker provides it; for a broker by URL put it under [commands];
  a body that is a list is sent as it is (e.g. a Jolokia bulk request);
- a keyword: "auto" (the broker creates queues on attach), "amqp" (preload by publishing with our peer),
  "drain" (purge by consuming over AMQP).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError

PROFILES_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "profiles"

# hook name -> the profile keys that provide it
HOOKS = {
    "memory_alarm": ("memory_alarm_raise", "memory_alarm_clear"),
    "disk_alarm": ("disk_alarm_raise", "disk_alarm_clear"),
    "queue_length_limit": ("queue_length_limit",),
    "queue_size_limit": ("queue_size_limit",),
}
HOOK_KEYS = {k for keys in HOOKS.values() for k in keys} | {"alarm_wait"}
HOOK_NAMES = tuple(HOOKS)
KEYWORDS = {"create": {"auto"}, "preload": {"amqp"}, "purge": {"drain"}, "delete": set(), "depth": set()}
SASL_MECHANISMS = {"auto", "PLAIN", "ANONYMOUS", "none"}
PARAMETERS = {"queue", "max_length", "max_length_bytes", "count", "body"}   # what actions may refer to


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]


@dataclass(frozen=True)
class ManagementCall:
    method: str
    path: str
    body: Any = None
    ok: tuple[int, ...] = (200, 201, 204)


@dataclass(frozen=True)
class HttpCall:
    method: str
    path: str
    body: Any = None
    ok: tuple[int, ...] = (200, 201, 204)


Action = Command | ManagementCall | HttpCall | str


@dataclass(frozen=True)
class SaslSettings:
    mechanism: str = "auto"          # auto: PLAIN when the URL has a user, else ANONYMOUS; "none": no SASL
    user: str | None = None          # used when the URL has no user
    password_env: str | None = None  # environment variable holding the password (never the password itself)


@dataclass(frozen=True)
class TlsSettings:
    enabled: bool = False            # also implied by an amqps:// URL
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True
    server_hostname: str | None = None


@dataclass
class Profile:
    name: str
    product: str = "unknown"
    source: str = "{queue}"
    target: str = "{queue}"
    existing: str | None = None      # address of a queue the suite created itself (with arguments)
    sasl: SaslSettings = field(default_factory=SaslSettings)
    tls: TlsSettings = field(default_factory=TlsSettings)
    queues: dict[str, Action] = field(default_factory=lambda: {"create": "auto", "preload": "amqp"})
    hooks: dict[str, Action] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)   # tool name -> argv prefix
    path: Path | None = None
    workers: int | None = None       # `run`'s worker processes for this broker when -n is not given (None: 2)

    @property
    def sasl_mechanism(self) -> str | None:
        """What `Peer.handshake(sasl=...)` takes: "auto", "PLAIN", "ANONYMOUS", or None for no SASL layer."""
        return None if self.sasl.mechanism == "none" else self.sasl.mechanism

    def queue_address(self, queue: str, role: str, *, existing: bool = False) -> str:
        if role not in ("source", "target"):
            raise ValueError(f"role must be 'source' or 'target', not {role!r}")
        template = self.existing if existing and self.existing else (self.source if role == "source" else self.target)
        return template.replace("{queue}", queue)

    def has_hook(self, name: str) -> bool:
        keys = HOOKS.get(name, (name,))
        return all(k in self.hooks for k in keys)

    def queue_action(self, what: str) -> Action | None:
        return self.queues.get(what)


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.toml"))


def named_toml(name_or_path: str, folder: Path, what: str, where: str = "") -> Path:
    """The file a name or path means: an existing `.toml` path, else `folder/NAME.toml` (the suite's own
    profiles and recipes). UsageError naming the choices when there is none."""
    path = Path(name_or_path).expanduser()
    if path.suffix == ".toml" and path.exists():
        return path
    if path.suffix == ".toml" or "/" in name_or_path:
        raise UsageError(f"no {what} file at {name_or_path}; check the path")
    path = folder / f"{name_or_path}.toml"
    if not path.exists():
        names = ", ".join(sorted(p.stem for p in folder.glob("*.toml")))
        raise UsageError(f"unknown {what} {name_or_path!r}; use one of {names} or a path to a .toml {what} file"
                         + (f" ({where})" if where else ""))
    return path


def load_profile(name_or_path: str) -> Profile:
    """A profile by name (fixtures/profiles/NAME.toml) or by path; UsageError for unknown or invalid ones."""
    path = named_toml(name_or_path, PROFILES_DIR, "profile")
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"profile {path} is not valid TOML ({exc}); fix the file") from None
    return parse_profile(data, name=path.stem, path=path)


def parse_profile(data: dict, *, name: str, path: Path | None = None) -> Profile:
    where = str(path or name)

    def bad(what: str) -> UsageError:
        return UsageError(f"profile {where}: {what}")

    known_tables = {"broker", "addressing", "sasl", "tls", "queues", "hooks", "commands"}
    unknown = sorted(set(data) - known_tables)
    if unknown:
        raise bad(f"unknown table [{unknown[0]}]; tables are {', '.join(sorted(known_tables))}")
    broker = data.get("broker", {})
    unknown = sorted(set(broker) - {"product", "workers"})
    if unknown:
        raise bad(f"unknown broker.{unknown[0]}; keys are product, workers")
    workers = broker.get("workers")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 64):
        raise bad(f"broker.workers {workers!r}: give a number of worker processes from 1 to 64")
    addressing = data.get("addressing", {})
    for key in ("source", "target", "existing"):
        value = addressing.get(key)
        if value is not None and (not isinstance(value, str) or "{queue}" not in value):
            raise bad(f"addressing.{key} must be a string containing {{queue}}, e.g. \"/queue/{{queue}}\"")

    sasl_data = data.get("sasl", {})
    mechanism = sasl_data.get("mechanism", "auto")
    if mechanism not in SASL_MECHANISMS:
        raise bad(f"sasl.mechanism {mechanism!r} is not one of {', '.join(sorted(SASL_MECHANISMS))}")
    if "password" in sasl_data:
        raise bad("sasl.password is not allowed (profiles are not secret); put the password in the URL or "
                  "name an environment variable with sasl.password_env")
    sasl = SaslSettings(mechanism, sasl_data.get("user"), sasl_data.get("password_env"))

    tls_data = data.get("tls", {})
    unknown = sorted(set(tls_data) - {"enabled", "ca_file", "cert_file", "key_file", "verify", "server_hostname"})
    if unknown:
        raise bad(f"unknown tls option {unknown[0]!r}; options are enabled, ca_file, cert_file, key_file, verify, "
                  "server_hostname")
    tls = TlsSettings(**tls_data)

    queues: dict[str, Action] = {"create": "auto", "preload": "amqp"}
    for key, value in data.get("queues", {}).items():
        if key not in KEYWORDS:
            raise bad(f"unknown queues.{key}; keys are {', '.join(KEYWORDS)}")
        queues[key] = _action(value, f"queues.{key}", KEYWORDS[key], bad)

    hooks: dict[str, Action] = {}
    for key, value in data.get("hooks", {}).items():
        if key not in HOOK_KEYS:
            raise bad(f"unknown hook {key!r}; hooks are {', '.join(sorted(HOOK_KEYS))}")
        hooks[key] = _action(value, f"hooks.{key}", set(), bad)
    for hook, keys in HOOKS.items():
        present = [k for k in keys if k in hooks]
        if present and len(present) != len(keys):
            missing = next(k for k in keys if k not in hooks)
            raise bad(f"hook {hook} needs {missing} too (raise and clear come in pairs)")

    commands = {}
    for tool, argv in data.get("commands", {}).items():
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            raise bad(f"commands.{tool} must be a non-empty list of strings (an argv prefix)")
        commands[tool] = list(argv)

    return Profile(
        name=name, product=broker.get("product", "unknown"),
        source=addressing.get("source", "{queue}"), target=addressing.get("target", "{queue}"),
        existing=addressing.get("existing"), sasl=sasl, tls=tls, queues=queues, hooks=hooks, commands=commands,
        path=path, workers=workers)


def _action(value: Any, key: str, keywords: set[str], bad) -> Action:
    if isinstance(value, str):
        if value in keywords:
            return value
        raise bad(f"{key} = {value!r}: expected an argv list, an amqp_management table"
                  + (f" or one of {', '.join(sorted(keywords))}" if keywords else ""))
    if isinstance(value, list):
        if not value or not all(isinstance(a, str) for a in value):
            raise bad(f"{key} must be a non-empty list of strings (an argv)")
        return Command(tuple(value))
    if isinstance(value, dict) and set(value) == {"amqp_management"}:
        call = value["amqp_management"]
        if not isinstance(call, dict) or "method" not in call or "path" not in call:
            raise bad(f"{key}.amqp_management needs method and path (and optionally body, ok)")
        ok = tuple(int(c) for c in call.get("ok", (200, 201, 204)))
        return ManagementCall(str(call["method"]).upper(), str(call["path"]), call.get("body"), ok)
    if isinstance(value, dict) and set(value) == {"http"}:
        call = value["http"]
        if not isinstance(call, dict) or "method" not in call or "path" not in call:
            raise bad(f"{key}.http needs method and path (and optionally body, ok)")
        ok = tuple(int(c) for c in call.get("ok", (200, 201, 204)))
        return HttpCall(str(call["method"]).upper(), str(call["path"]), call.get("body"), ok)
    raise bad(f"{key} must be an argv list, {{ amqp_management = {{ method, path, body }} }} or "
              "{ http = { method, path, body } }")


def tools_needed(action: Action) -> set[str]:
    """The tools a command splices in: whole "{name}" elements that are not parameters (an HTTP call needs
    the tool "http", its base URL)."""
    if isinstance(action, HttpCall):
        return {"http"}
    if not isinstance(action, Command):
        return set()
    return {p[1:-1] for p in action.argv if p.startswith("{") and p.endswith("}") and p[1:-1] not in PARAMETERS}


def expand(command: Command | list, tools: dict[str, list[str]], **values) -> list[str]:
    """A command's argv: "{tool}" elements splice in the tool's argv, other {names} are filled in."""
    argv: list[str] = []
    for part in (command.argv if isinstance(command, Command) else command):
        key = part[1:-1] if part.startswith("{") and part.endswith("}") else None
        if key is not None and key in tools:
            argv.extend(tools[key])
        else:
            argv.append(fill(part, values))
    return argv


def fill(template: str, values: dict) -> str:
    """Replace only the known {placeholders} (Erlang terms in commands contain braces of their own)."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", str(value))
    return template


def fill_value(value: Any, values: dict) -> Any:
    """Fill placeholders in a management body: a string that is exactly "{name}" becomes the (typed)
    parameter; a key whose value is such a placeholder with no parameter given is left out."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, str) and _sole_placeholder(v) and _sole_placeholder(v) not in values:
                continue
            out[k] = fill_value(v, values)
        return out
    if isinstance(value, list):
        return [fill_value(v, values) for v in value]
    if isinstance(value, str):
        key = _sole_placeholder(value)
        if key is not None and key in values:
            return values[key]
        return fill(value, values)
    return value


def _sole_placeholder(text: str) -> str | None:
    if text.startswith("{") and text.endswith("}") and text.count("{") == 1:
        return text[1:-1]
    return None
