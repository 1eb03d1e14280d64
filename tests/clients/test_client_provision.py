"""Provisioning of the registries added for Rust (cargo) and Debian packages (apt + g++): what cannot be had is one
line naming it (ProvisionFailed, exit 8), never a traceback; the driver sources are part of the stamp."""

from __future__ import annotations

import subprocess

import pytest

from conformance.clients import resolve
from conformance.clients import provision as prov
from conformance.errors import ProvisionFailed


def test_a_missing_registry_client_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("AMQP_CONFORMANCE_CACHE", str(tmp_path))
    monkeypatch.setattr(prov.shutil, "which", lambda name: None)
    with pytest.raises(ProvisionFailed) as exc:
        prov.provision(resolve("fe2o3-amqp"))
    text = str(exc.value)
    assert "\n" not in text and "`cargo` is not installed" in text and "fe2o3-amqp-" in text


def test_a_debian_package_of_another_release_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("AMQP_CONFORMANCE_CACHE", str(tmp_path))
    monkeypatch.setattr("conformance.brokers.managed.apt_install", lambda packages, what: None)
    real_run = subprocess.run

    def fake_run(argv, *a, **kw):
        if argv[:2] == ["dpkg-query", "-W"]:
            return subprocess.CompletedProcess(argv, 0, stdout="0.36.0-1", stderr="")
        return real_run(argv, *a, **kw)
    monkeypatch.setattr(prov.subprocess, "run", fake_run)
    with pytest.raises(ProvisionFailed) as exc:
        prov.provision(resolve("qpid-proton-cpp"))
    assert "0.36.0-1, not release 0.37.0" in str(exc.value)


def test_compiled_drivers_are_stamped_with_their_sources():
    for label in ("fe2o3-amqp-0.18.4", "qpid-proton-cpp-0.37.0", "vertx-proton-5.0.7"):
        lib = resolve(label)
        assert lib.registry in prov.COMPILED
        assert prov._stamp(lib) != prov._stamp(resolve("rhea-3.0.5"))
