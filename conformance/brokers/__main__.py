"""`python -m conformance.brokers list|up|down|status|provision [NAMES] [--all]`."""

import sys

from ..cli import main

sys.exit(main(["brokers", *sys.argv[1:]]))
