"""User-facing errors and the exit-code table of the `amqp-conformance` command.

Every error a user can cause (bad input, unreachable broker, failed provisioning) is a `ConformanceError`
carrying a one-line message that names the problem and the fix, and a distinct exit code. The CLI prints
`error: <message>` and exits with the code; it never shows a traceback for these.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_MUST_FAILED = 1          # a MUST-level case failed
EXIT_USAGE = 2                # bad arguments, bad URL, unknown broker name or profile
EXIT_UNKNOWN_CASE = 3         # a case id or requirement id that does not exist
EXIT_BROKER_UNREACHABLE = 4   # connection refused / host unknown / timed out connecting
# 5 is left out: pytest uses it for "no tests collected"
EXIT_AUTH_FAILED = 6          # SASL outcome not ok, or TLS handshake refused
EXIT_BROKER_START_FAILED = 7  # managed broker did not become ready in time, or died
EXIT_PROVISION_FAILED = 8     # installing a managed broker failed (apt, debootstrap, build)
EXIT_PORT_IN_USE = 9          # a requested port is taken
EXIT_PERMISSION = 10          # e.g. not root for chroot/apt
EXIT_MALFORMED_FRAME = 11     # the broker sent bytes our codec cannot decode
EXIT_BAD_RESULTS = 12         # missing / corrupted results directory or file
EXIT_SPARK_UNAVAILABLE = 13   # no Java, or the Spark master / Spark Connect server cannot be reached
EXIT_CASE_ERROR = 14          # the run broke: a case ended in `error` (takes precedence over 1), or the engine did
EXIT_NOT_AMQP = 15            # the target is not an AMQP 1.0 server: it answered our protocol header with other bytes
EXIT_BAD_EXPECTATIONS = 16    # a malformed expectations file (--expect), or an entry for a case or requirement that does not exist
# 21-25: `check` of capture files (conformance/traffic)
EXIT_CAPTURE_TRUNCATED = 21   # a pcap / pcapng file cut short in the middle of a packet or block
EXIT_CAPTURE_NO_AMQP = 22     # a capture without AMQP in it (e.g. HTTP traffic only)
EXIT_CAPTURE_TLS = 23         # a capture whose AMQP is TLS-encrypted only: nothing can be judged
EXIT_NOT_A_CAPTURE = 24       # a file that is neither pcap, pcapng nor a transcript
EXIT_CAPTURE_ONE_SIDED = 25   # a capture holding one direction only of each of its AMQP connections
EXIT_INTERRUPTED = 130


class ConformanceError(Exception):
    """An error with a one-line message (problem + fix) and an exit code."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class UsageError(ConformanceError):
    exit_code = EXIT_USAGE


class UnknownCaseError(ConformanceError):
    exit_code = EXIT_UNKNOWN_CASE


class BrokerUnreachable(ConformanceError):
    exit_code = EXIT_BROKER_UNREACHABLE


class AuthenticationFailed(ConformanceError):
    exit_code = EXIT_AUTH_FAILED


class BrokerStartFailed(ConformanceError):
    exit_code = EXIT_BROKER_START_FAILED


class ProvisionFailed(ConformanceError):
    exit_code = EXIT_PROVISION_FAILED


class PortInUse(ConformanceError):
    exit_code = EXIT_PORT_IN_USE


class PermissionProblem(ConformanceError):
    exit_code = EXIT_PERMISSION


class MalformedFrame(ConformanceError):
    exit_code = EXIT_MALFORMED_FRAME


class NotAmqpServer(ConformanceError):
    exit_code = EXIT_NOT_AMQP


class BadResults(ConformanceError):
    exit_code = EXIT_BAD_RESULTS


class BadExpectations(ConformanceError):
    """The expectations file (`run --expect`) is malformed or names a case or requirement the suite lacks."""

    exit_code = EXIT_BAD_EXPECTATIONS


class SparkUnavailable(ConformanceError):
    exit_code = EXIT_SPARK_UNAVAILABLE


class RunBroken(ConformanceError):
    """The run itself broke after it started (pytest could not collect or run the cases)."""

    exit_code = EXIT_CASE_ERROR


class CaptureTruncated(ConformanceError):
    exit_code = EXIT_CAPTURE_TRUNCATED


class CaptureWithoutAmqp(ConformanceError):
    exit_code = EXIT_CAPTURE_NO_AMQP


class CaptureEncrypted(ConformanceError):
    exit_code = EXIT_CAPTURE_TLS


class NotACapture(ConformanceError):
    exit_code = EXIT_NOT_A_CAPTURE


class CaptureOneSided(ConformanceError):
    exit_code = EXIT_CAPTURE_ONE_SIDED
