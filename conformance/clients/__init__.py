"""Client libraries under test: the suite plays the broker and judges the client's side of flow control.

This package owns the client side of the subject list: which libraries exist at which pinned versions
(`library`), installing each from its own package registry into the shared cache (`provision`), the driver
process that runs one library through its public API and speaks the JSON-lines command protocol of
`clients/PROTOCOL.md` (`driver`), and the handle the run pipeline treats like a broker (`subject`): its
`name` is the label `<library>-<version>`, so results, history, diff and bisect treat a client@version like a
broker@version. The driver programs themselves live in the repository's top-level `clients/` folder.
"""

from .library import LIBRARIES, Library, resolve, series
from .driver import Driver, DriverError
from .subject import ClientSubject

__all__ = ["LIBRARIES", "Library", "resolve", "series", "Driver", "DriverError", "ClientSubject"]
