"""Broker profiles, handle logic that needs no broker, identity, mirror discovery and name resolution."""

from pathlib import Path

import pytest

from conformance import brokers
from conformance.brokers.handle import BrokerHandle, record_broker_identity
from conformance.peer import parse_url
from conformance.brokers.managed import debian_mirror
from conformance.brokers.profiles import (
    Command, ManagementCall, available_profiles, fill_value, load_profile, parse_profile, tools_needed,
)
from conformance.casekit import CaseConclusion
from conformance.errors import ProvisionFailed, UsageError


def test_shipped_profiles_load_and_cover_the_managed_brokers():
    assert {"generic", "qpid-proton-c", "rabbitmq-3", "rabbitmq-4"} <= set(available_profiles())
    for cls in brokers.MANAGED.values():
        assert load_profile(cls.profile_name).name == cls.profile_name
    r4 = load_profile("rabbitmq-4")
    assert r4.queue_address("q1", "source") == "/queues/q1"     # v2 addresses: 4.3 refuses v1
    assert r4.queue_address("q1", "target", existing=True) == "/queues/q1"
    assert isinstance(r4.queues["depth"], ManagementCall) and r4.queues["depth"].method == "GET"
    assert isinstance(r4.hooks["memory_alarm_raise"], Command)
    assert r4.has_hook("memory_alarm") and r4.has_hook("queue_length_limit")
    proton = load_profile("qpid-proton-c")
    assert proton.sasl_mechanism == "ANONYMOUS" and not proton.has_hook("memory_alarm")
    assert proton.queues["purge"] == "drain"
    assert load_profile("activemq").workers == 4 and proton.workers is None and r4.workers is None


@pytest.mark.parametrize("data, message", [
    ({"nonsense": {}}, "unknown table [nonsense]"),
    ({"addressing": {"source": "/queue/"}}, "must be a string containing {queue}"),
    ({"sasl": {"mechanism": "KERBEROS"}}, "sasl.mechanism 'KERBEROS'"),
    ({"sasl": {"password": "hunter2"}}, "sasl.password is not allowed"),
    ({"tls": {"cafile": "x"}}, "unknown tls option 'cafile'"),
    ({"queues": {"create": "sometimes"}}, "queues.create = 'sometimes'"),
    ({"queues": {"wipe": ["x"]}}, "unknown queues.wipe"),
    ({"hooks": {"memory_alarm_raise": ["x"]}}, "needs memory_alarm_clear too"),
    ({"hooks": {"make_coffee": ["x"]}}, "unknown hook 'make_coffee'"),
    ({"hooks": {"queue_length_limit": {"amqp_management": {"method": "PUT"}}}}, "needs method and path"),
    ({"commands": {"ctl": "rabbitmqctl"}}, "commands.ctl must be a non-empty list"),
    ({"broker": {"threads": 4}}, "unknown broker.threads"),
    ({"broker": {"workers": 0}}, "broker.workers 0: give a number of worker processes from 1 to 64"),
    ({"broker": {"workers": "4"}}, "broker.workers '4'"),
    ({"broker": {"workers": True}}, "broker.workers True"),
])
def test_invalid_profiles_are_one_line_usage_errors(data, message):
    with pytest.raises(UsageError) as info:
        parse_profile(data, name="mine")
    assert message in info.value.message and "\n" not in info.value.message
    assert "hunter2" not in info.value.message


def test_profile_files_by_path_and_unknown_names(tmp_path):
    mine = tmp_path / "mine.toml"
    mine.write_text('[broker]\nproduct = "Mine"\n[addressing]\nsource = "q.{queue}"\ntarget = "q.{queue}"\n')
    assert load_profile(str(mine)).queue_address("a", "source") == "q.a"
    with pytest.raises(UsageError, match="unknown profile 'nope'"):
        load_profile("nope")
    with pytest.raises(UsageError, match="no profile file at"):
        load_profile(str(tmp_path / "missing.toml"))
    broken = tmp_path / "broken.toml"
    broken.write_text("[broker\n")
    with pytest.raises(UsageError, match="not valid TOML"):
        load_profile(str(broken))


def test_management_bodies_get_typed_parameters_and_drop_unset_ones():
    body = {"durable": True, "arguments": {"x-max-length": "{max_length}", "x-max-length-bytes": "{max_length_bytes}",
                                           "name": "q-{queue}"}}
    filled = fill_value(body, {"max_length": 5, "queue": "a"})
    assert filled == {"durable": True, "arguments": {"x-max-length": 5, "name": "q-a"}}
    assert tools_needed(Command(("{rabbitmqctl}", "eval", "{queue}"))) == {"rabbitmqctl"}


def test_a_missing_hook_is_unsupported_not_a_failure():
    handle = BrokerHandle("x", parse_url("amqp://127.0.0.1:1"), load_profile("generic"))
    assert not handle.has_hook("memory_alarm")
    with pytest.raises(brokers.HookUnsupported) as info:
        handle.run_hook("memory_alarm", on=True)
    assert not isinstance(info.value, CaseConclusion)     # a broker-level error; the runner makes it unsupported
    assert info.value.hook == "memory_alarm"
    with pytest.raises(brokers.HookUnsupported):
        handle.create_queue("q", max_length=3)


def test_a_hook_whose_tool_is_unknown_counts_as_missing():
    # rabbitmq-3's alarm hooks use {rabbitmqctl}: an external broker without [commands] cannot run them
    handle = BrokerHandle("ext", parse_url("amqp://u:p@127.0.0.1:1"), load_profile("rabbitmq-3"))
    assert not handle.has_hook("memory_alarm") and not handle.has_hook("queue_length_limit")
    assert handle.queue_depth("q") is None
    with_tool = BrokerHandle("ext", parse_url("amqp://u:p@127.0.0.1:1"), load_profile("rabbitmq-3"),
                             tools={"rabbitmqctl": ["rabbitmqctl"]})
    assert with_tool.has_hook("queue_length_limit")


def test_handle_api_and_redaction(monkeypatch, tmp_path):
    handle = BrokerHandle("ext", parse_url("amqps://alice:s3cret@broker.example:5671"), load_profile("rabbitmq-4"))
    assert (handle.host, handle.port) == ("broker.example", 5671)
    assert handle.redacted_url == "amqps://alice:***@broker.example:5671"
    assert "s3cret" not in repr(handle) and "s3cret" not in handle.redacted_url
    assert handle.sasl.mechanism == "PLAIN" and "memory_alarm_raise" in handle.hooks
    a, b = handle.unique_queue("case"), handle.unique_queue("case")
    assert a != b and a.startswith("case-")
    with pytest.raises(TypeError, match="unknown limit"):
        handle.create_queue("q", max_messages=3)
    # credentials from the profile (password from the environment) when the URL has none
    profile = tmp_path / "creds.toml"
    profile.write_text('[sasl]\nmechanism = "PLAIN"\nuser = "bob"\npassword_env = "AMQPC_TEST_PW"\n'
                       '[tls]\nenabled = true\nverify = false\n')
    monkeypatch.setenv("AMQPC_TEST_PW", "pa:ss")
    h2 = BrokerHandle("ext", parse_url("amqp://127.0.0.1:5672"), load_profile(str(profile)))
    assert h2.address.user == "bob" and h2.address.password == "pa:ss"
    assert h2.redacted_url == "amqp://bob:***@127.0.0.1:5672"
    assert h2.tls is not None and h2.tls.verify is False


def test_broker_identity_from_open_properties():
    from conformance.wire import Symbol
    assert record_broker_identity({Symbol("product"): "RabbitMQ", Symbol("version"): "4.0.5"}) == ("RabbitMQ", "4.0.5")
    assert record_broker_identity(None, "fallback", "1.0") == ("fallback", "1.0")
    handle = BrokerHandle("x", parse_url("amqp://127.0.0.1:1"), load_profile("generic"))
    handle.record_identity({"product": "Artemis", "platform": "Java"})
    assert (handle.product, handle.version) == ("Artemis", None)


def test_resolve_names_urls_and_typos():
    assert brokers.resolve("rabbitmq-4.0").profile == "rabbitmq-4"
    spec = brokers.resolve("amqp://guest:guest@127.0.0.1:5672", "rabbitmq-4")
    assert (spec.name, spec.profile) == ("127.0.0.1:5672", "rabbitmq-4")
    assert brokers.resolve("amqp://127.0.0.1:5672").profile == "generic"
    with pytest.raises(UsageError, match=r"did you mean rabbitmq-4\.[03]"):
        brokers.resolve("rabbitmq-4")
    with pytest.raises(UsageError):
        brokers.resolve("amqp://host:notaport")


def _apt(tmp_path: Path, sources: str = "", lst: str = "") -> Path:
    (tmp_path / "sources.list.d").mkdir(parents=True)
    if sources:
        (tmp_path / "sources.list.d" / "debian.sources").write_text(sources)
    if lst:
        (tmp_path / "sources.list").write_text(lst)
    return tmp_path


def test_debian_mirror_is_read_from_apt_configuration(tmp_path):
    deb822 = ("Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: bookworm-security\n\n"
              "Types: deb\n# a comment\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n"
              "Components: main\n")
    assert debian_mirror(_apt(tmp_path / "a", sources=deb822)) == "http://mirror.invalid/debian"
    one_line = "deb [signed-by=/x.gpg] http://other.invalid/debian bookworm main\n"
    assert debian_mirror(_apt(tmp_path / "b", lst=one_line)) == "http://other.invalid/debian"
    with pytest.raises(ProvisionFailed, match="cannot find a Debian mirror"):
        debian_mirror(_apt(tmp_path / "c"))
