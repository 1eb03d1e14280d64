"""`amqp-conformance run --client LIBRARY` end to end with real client libraries (provisioned by `./dev test`):
one driver for the run, results under the library's label (the `broker` field, as for brokers), a transcript
per case; `clients list`; a library that is not provisioned is one line, exit 8."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main
from conformance.clients import resolve
from conformance.clients.provision import provisioned
from conformance.errors import EXIT_PROVISION_FAILED, EXIT_USAGE

TESTED = ["python-qpid-proton-0.40.0", "rhea-3.0.5"]     # ./dev test provisions these


@pytest.mark.parametrize("label", TESTED)
def test_run_client_records_the_library_like_a_broker(label, tmp_path, capsys):
    if not provisioned(resolve(label)):
        pytest.skip(f"{label} is not provisioned; `./dev test` provisions it")
    code = main(["run", "--client", label, "2.7.4/101", "2.7.4/102", "--reports-dir", str(tmp_path),
                 "--frame-timeout", "2", "--quiet-period", "0.2"])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    run = next((tmp_path / "runs").iterdir())
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in records) == ["2.7.4/101", "2.7.4/102"]
    lib = resolve(label)
    for r in records:
        assert (r["broker"], r["broker_product"], r["broker_version"]) == (label, lib.name, lib.version)
        assert r["verdict"] in ("pass", "fail", "non-strict", "informational"), r["reason"]
        assert r["observations"]["driver_starts"] == 1            # one driver for the whole run
    transcripts = sorted(p.name for p in (run / "transcripts").iterdir())
    assert any(name.startswith("2.7.4_101") or "101" in name for name in transcripts), transcripts
    assert json.loads((run / "run.json").read_text())["subject_kind"] == "client"
    assert "1 client" in out
    for r in records:                      # a fail / non-strict cell has its paste-able bug report beside it
        report = r["observations"].get("bug_report")
        assert (report is not None) == (r["verdict"] in ("fail", "non-strict")), r
        if report:
            text = (run / report).read_text()
            assert text.startswith(f"## {lib.name} {lib.version}: ") and f"--client {label} {r['case_id']}" in text


def test_clients_list_and_usage_errors(capsys, tmp_path, monkeypatch):
    assert main(["clients", "list"]) == 0
    listed = capsys.readouterr().out
    for name in ("python-qpid-proton", "rhea", "qpid-jms", "protonj2", "go-amqp", "fe2o3-amqp", "qpid-proton-cpp",
                 "azure-servicebus", "rhea-promise", "vertx-proton", "vertx-amqp-client"):
        assert name in listed
    from conformance.clients import LIBRARIES
    assert len({lib.name for lib in LIBRARIES}) >= 10 and len({lib.language for lib in LIBRARIES}) >= 6
    for lib in LIBRARIES:
        assert lib.language in listed and (lib.driver_dir.is_dir()), lib.label
    assert main(["run", "--client", "no-such-library"]) == EXIT_USAGE
    assert main(["run", "--client", "rhea", "--broker", "qpid-proton-c"]) == EXIT_USAGE
    monkeypatch.setenv("AMQP_CONFORMANCE_CACHE", str(tmp_path))          # an empty cache: nothing provisioned
    assert main(["run", "--client", "go-amqp", "--reports-dir", str(tmp_path)]) == EXIT_PROVISION_FAILED
    assert "clients provision" in capsys.readouterr().err
