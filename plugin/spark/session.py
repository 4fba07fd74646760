"""Creating the SparkSession the Spark stage runs on.

Defaults are tuned for what the stage does: small Arrow batches of RDF text
through pandas UDFs, one shuffle by partition key. Local masters get a few
shuffle partitions per core instead of Spark's 200 (each empty partition still
costs a task), no web UI, no progress bar and a log4j configuration that only
lets errors through, so a CLI run or a test log stays readable.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from rsep.plugin.spark.cds import ClassCache

_LOG4J2 = """\
# rsep: Spark logs errors only (written by rsep.plugin.spark.session)
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
# The same level as the root keeps Spark from announcing its shell log level.
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""

_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_MASTER_PREFIXES = ("local", "spark", "yarn", "k8s")
"""SparkSubmit's own rule: a master is yarn or starts with spark, k8s or local."""
SPARK_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JError)
"""What Spark raises when it fails (to start, or in a job), as opposed to rsep's own errors."""


class SparkUnavailable(RuntimeError):
    """Spark cannot start as configured: a master URL it does not accept, or no Java. Checked
    before the JVM is launched, which would otherwise print its own stack trace and fail."""


_LOCAL = re.compile(r"local(?:\[(\*|\d+)(?:,\d+)?\])?$")


def get_session(
    master: str = "local[*]",
    app_name: str = "rsep",
    conf: Mapping[str, str] | None = None,
    *,
    class_cache: str | os.PathLike[str] | None = None,
) -> SparkSession:
    """The active session, or a new one on `master`. `conf` overrides the
    defaults (including `spark.driver.extraJavaOptions`, which carries the
    quiet log4j configuration). `class_cache` (default: $RSEP_SPARK_CDS_DIR)
    is a directory for a class-data archive that speeds up later starts (see
    `rsep.plugin.spark.cds`). Options that need a new JVM only apply when
    this call starts it."""
    for variable in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        # Spark's Python workers otherwise run whatever `python3` is on PATH,
        # which lacks this environment's pyarrow, pandas and rsep.
        os.environ.setdefault(variable, sys.executable)
    starting = SparkSession.getActiveSession() is None
    if starting:
        check_startable(master)
    settings = default_conf(master)
    cache = ClassCache.configured(class_cache) if starting else None
    if cache is not None:
        options = f"{settings[_JAVA_OPTIONS]} {cache.java_options()}"
        settings[_JAVA_OPTIONS] = options.strip()
    builder = SparkSession.builder.master(master).appName(app_name)
    for name, value in {**settings, **(conf or {})}.items():
        builder = builder.config(name, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if cache is not None:
        cache.started(_jvm_pid(session))
    return session


def check_startable(master: str) -> None:
    """Fail fast, in one sentence, where starting Spark on `master` cannot work."""
    if not master.strip().startswith(_MASTER_PREFIXES):
        raise SparkUnavailable(
            f"Spark master {master!r} is not one Spark accepts (local[N], spark://HOST:PORT, yarn, k8s://URL)"
        )
    home = os.environ.get("JAVA_HOME")
    if home:  # what pyspark's launcher (bin/spark-class) runs
        if not os.access(Path(home) / "bin" / "java", os.X_OK):
            raise SparkUnavailable(
                f"JAVA_HOME is {home}, which has no bin/java: Spark needs Java 17 or later"
            )
    elif shutil.which("java") is None:
        raise SparkUnavailable("Spark needs Java 17 or later: JAVA_HOME is not set and java is not on PATH")


def stop_session() -> None:
    """Stop the active session (and its JVM's SparkContext), if any."""
    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()


def default_conf(master: str) -> dict[str, str]:
    """The configuration `get_session` starts from."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # A silent fallback to row-by-row conversion would hide a schema bug.
        "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        _JAVA_OPTIONS: f"-Dlog4j2.configurationFile={_log4j_file().as_uri()}",
    }
    cores = local_cores(master)
    if cores is not None:
        conf["spark.sql.shuffle.partitions"] = str(2 * cores)
        conf["spark.default.parallelism"] = str(cores)
    return conf


def local_cores(master: str) -> int | None:
    """Worker threads of a `local`, `local[N]`, `local[*]` or `local[N,F]`
    master; None for cluster masters."""
    match = _LOCAL.match(master.strip())
    if match is None:
        return None
    threads = match.group(1)
    if threads is None:
        return 1
    return (os.cpu_count() or 1) if threads == "*" else int(threads)


def _jvm_pid(session: SparkSession) -> int:
    jvm: Any = session.sparkContext._jvm
    return int(jvm.java.lang.ProcessHandle.current().pid())


def _log4j_file() -> Path:
    """The log4j2 configuration as a file (log4j reads files, not strings),
    named by its content so concurrent sessions can share it."""
    digest = hashlib.sha256(_LOG4J2.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"rsep-spark-log4j2-{digest}.properties"
    if not path.exists():
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(_LOG4J2)
        os.chmod(temp, 0o644)  # other users' sessions read the same file
        os.replace(temp, path)  # atomic: a reader never sees a half-written file
    return path
