"""pytest's entry point for the suite (pytest11): `pytest --pyargs conformance.suite --broker NAME|URL ...`.

The plugin is `conformance.run.plugin`, the run pipeline's pytest face (options, configuration, the collection
of `conformance/suite` into case items; its docstring has the options); this module hands on its hooks so that
pytest finds them here. `amqp-conformance run` loads `conformance.run.plugin` itself and never this module.
"""

from __future__ import annotations

from conformance.run.plugin import (  # noqa: F401  (pytest finds hooks by name on this module)
    pytest_addoption, pytest_collect_directory, pytest_configure,
)
