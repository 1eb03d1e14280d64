"""pytest's entry point for the suite (pytest11): `pytest --pyargs conformance.suite --broker NAME|URL ...`.

The plugin is `conformance.run.plugin`, the run pipeline's pytest face (options, parametrisation, fixtures;
its docstring has the options); this module hands on its hooks and fixtures so that pytest finds them here.
`amqp-conformance run` loads `conformance.run.plugin` itself and never this module.
"""

from __future__ import annotations

from conformance.run.plugin import (  # noqa: F401  (pytest finds hooks and fixtures by name on this module)
    conformance_broker, conformance_options, conformance_queue, conformance_run, pytest_addoption, pytest_configure,
    pytest_generate_tests,
)
