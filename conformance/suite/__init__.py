"""The conformance suite's collection anchor: `pytest --pyargs conformance.suite --broker NAME|URL` (and
`amqp-conformance run`, which runs pytest on this directory) collects this package, and the run pipeline's
plugin (`conformance.run.plugin`) turns its collection into one item per case x target
(`conformance.run.items`). It holds no tests of its own."""
