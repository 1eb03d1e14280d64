"""Getting a Spark session: local Spark by default, a Spark master or a Spark Connect server when given.

This module owns every check made before Spark starts, so that a missing Java, a missing pyspark, or a master
that does not answer gives a one-line SparkUnavailable error (exit 13) instead of a JVM stack trace or a hang.
Spark's own console logging is turned down to errors.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ..errors import SparkUnavailable, UsageError

LOCAL_DEFAULT = "local[2]"
CONNECT_TIMEOUT_S = 5.0

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n
"""


@dataclass(frozen=True)
class SparkTarget:
    """Where the analysis runs: `local[N]`, `spark://host:port` (master) or `sc://host:port` (Connect)."""

    master: str | None = None
    remote: str | None = None

    @property
    def label(self) -> str:
        return self.remote or self.master or LOCAL_DEFAULT


def _check_reachable(url: str, default_port: int, what: str, option: str) -> None:
    parsed = urlparse(url)
    if not parsed.hostname:
        raise UsageError(f"{option} {url!r} has no host; use e.g. {option} {parsed.scheme or 'spark'}://host:port")
    port = parsed.port or default_port
    try:
        with socket.create_connection((parsed.hostname, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise SparkUnavailable(f"cannot reach the {what} at {parsed.hostname}:{port} ({reason}); start it or "
                               f"leave out {option} to use local Spark") from None


def _check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise SparkUnavailable("Spark needs Java 17 or newer and none was found; install it (apt-get install "
                               "openjdk-17-jre-headless) or set JAVA_HOME")


# Paths the driver lists itself before Spark lists them in a job: more than any history or ingest here holds.
LIST_IN_DRIVER_BELOW = 1_000_000
# What opening one file costs, in bytes of reading, when Spark packs small files into tasks.
OPEN_COST_BYTES = 256 * 1024


def session(target: SparkTarget | None = None, app_name: str = "amqp-conformance", log_file: Path | None = None,
            local_config: dict | None = None, local_java_options: str = ""):
    """A SparkSession for `target`; SparkUnavailable (exit 13) if it cannot be had. The JVM's own console
    output goes to `log_file` (default: a file in the temporary directory) instead of the user's terminal.
    `local_config`, `local_java_options`: more settings and JVM options for a local[N] session only (none for a
    cluster's)."""
    warnings.filterwarnings("ignore", message=".*pandas.*", category=FutureWarning)
    target = target or SparkTarget()
    if target.master and target.remote:
        raise UsageError("give either --spark-master or --spark-remote, not both")
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailable("pyspark is not installed; run ./dev report (or pip install 'amqp-conformance[report]')") \
            from None
    if target.remote:
        if not target.remote.startswith("sc://"):
            raise UsageError(f"--spark-remote {target.remote!r} is not a Spark Connect URL; use sc://host:port")
        _check_reachable(target.remote, 15002, "Spark Connect server", "--spark-remote")
        try:
            return SparkSession.builder.remote(target.remote).appName(app_name).getOrCreate()
        except Exception as exc:  # noqa: BLE001 - any client failure becomes one line
            raise SparkUnavailable(f"Spark Connect at {target.remote} refused the session "
                                   f"({_first_line(exc)}); check the server") from None
    _check_java()
    master = target.master or LOCAL_DEFAULT
    if master.startswith("spark://"):
        _check_reachable(master, 7077, "Spark master", "--spark-master")
    elif not master.startswith("local"):
        raise UsageError(f"--spark-master {master!r} is not supported; use spark://host:port or local[N]")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log_config = Path(tempfile.gettempdir()) / "amqp-conformance-spark-log4j2.properties"
    if not log_config.exists():
        log_config.write_text(_LOG4J2)
    java_opts = f"-Dlog4j2.configurationFile=file:{log_config}"
    if local_java_options and master.startswith("local"):
        java_opts += " " + local_java_options
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", os.environ.get("AMQP_CONFORMANCE_SPARK_MEMORY", "2g"))
               .config("spark.driver.extraJavaOptions", java_opts)
               .config("spark.executor.extraJavaOptions", java_opts)
               # partitioned writes without a sort: a few open writers per task instead
               .config("spark.sql.optimizer.plannedWrite.enabled", "false")
               .config("spark.sql.maxConcurrentOutputFileWriters", "32")
               # the files of the history and of the runs are on a file system the driver can read: it lists
               # them itself (2,000 results.jsonl in 0.3 s) instead of in a Spark job of one task per path
               # (4.5-8.8 s for 2,000 on two cores), which Spark starts above 32 paths by default
               .config("spark.sql.sources.parallelPartitionDiscovery.threshold", str(LIST_IN_DRIVER_BELOW))
               # opening a local file costs far less than Spark's default estimate (4 MB of reading), which made
               # each task of an ingest of many small runs take ~30 results.jsonl and write a file per broker:
               # 2,000 nightly runs (1M records) were written as 325 Parquet files in 8.1 s, now 40 in 5.1 s
               .config("spark.sql.files.openCostInBytes", str(OPEN_COST_BYTES)))
    if master.startswith("spark://"):
        builder = builder.config("spark.cores.max", os.environ.get("AMQP_CONFORMANCE_SPARK_CORES", "2"))
    else:
        for key, value in (local_config or {}).items():
            builder = builder.config(key, value)
    try:
        with _jvm_output_to(Path(log_file) if log_file else None):
            spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001
        raise SparkUnavailable(f"Spark did not start ({_first_line(exc)}); check Java and --spark-master") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def _jvm_output_to(log_file: Path | None):
    """The JVM inherits file descriptors 1 and 2 when it starts: point them at a log file meanwhile."""
    log_file = log_file or Path(tempfile.gettempdir()) / "amqp-conformance-spark.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(log_file, "ab") as fh:
            os.dup2(fh.fileno(), 1)
            os.dup2(fh.fileno(), 2)
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
