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
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from py4j.protocol import Py4JError
from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkException, PySparkRuntimeError
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from rsep.plugin.errors import EngineUnavailable
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
# A context that fails to start logs its exception with the stack trace, and the exception
# reaches rsep, which reports it in one line: off until the context runs (`get_session`).
logger.context.name = org.apache.spark.SparkContext
logger.context.level = off
"""

_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_MASTER_PREFIXES = ("local", "spark", "yarn", "k8s")
"""SparkSubmit's own rule: a master is yarn or starts with spark, k8s or local."""
SPARK_ERRORS: tuple[type[Exception], ...] = (PySparkException, Py4JError)
"""What Spark raises when it fails (to start, or in a job), as opposed to rsep's own errors."""


class SparkUnavailable(EngineUnavailable):
    """Spark cannot start as configured: a master URL it does not accept, or no Java. Checked
    before the JVM is launched, which would otherwise print its own stack trace and fail."""


_LOCAL = re.compile(r"local(?:\[(\*|\d+)(?:\s*,\s*\d+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]$")
"""Spark's own forms of local masters (SparkMasterRegex): local, local[N], local[*], local[N,F],
and the test cluster local-cluster[workers,cores,memory]."""
_JAVA_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')
_MIN_JAVA = 17
CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a standalone master's port to accept a connection (Spark itself retries
its registration for 60 s before it gives up)."""
_JVM_NOISE = (b"WARNING: Using incubator modules:",)
"""Lines the JVM prints on its stderr that say nothing to an rsep user: Spark's launcher adds
`--add-modules=jdk.incubator.vector` to every JVM it starts, and Java announces it."""


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
    try:
        if starting:
            _launch_jvm({"spark.master": master, "spark.app.name": app_name, **settings, **(conf or {})})
        session = builder.getOrCreate()
    except PySparkRuntimeError as error:
        if error.getCondition() == "JAVA_GATEWAY_EXITED":
            raise SparkUnavailable(f"Spark cannot start a JVM ({failure_message(error)})") from error
        raise
    session.sparkContext.setLogLevel("ERROR")
    if starting:
        _log_errors_of("org.apache.spark.SparkContext", session)
    if cache is not None:
        cache.started(_jvm_pid(session))
    return session


def check_startable(master: str) -> None:
    """Fail fast, in one sentence, where starting Spark on `master` cannot work: a master URL
    Spark would not parse, no usable Java, or a standalone master (`spark://HOST:PORT[,...]`)
    none of whose addresses accepts a connection within `CONNECT_TIMEOUT` seconds (Spark would
    retry for a minute, then fail with "All masters are unresponsive")."""
    if not _accepted(master.strip()):
        raise SparkUnavailable(
            f"Spark master {master!r} is not one Spark accepts (local, local[N], local[*], local[N,F], "
            "spark://HOST:PORT, yarn, k8s://URL)"
        )
    check_java()
    if master.strip().startswith("spark://"):
        check_reachable(master.strip())


def check_reachable(master: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """A standalone master URL: one of its HOST:PORT addresses accepts a TCP connection."""
    problems = []
    for address in master[len("spark://") :].split(","):
        parts = urlsplit(f"spark://{address}")
        try:
            host, port = parts.hostname, parts.port or 7077
        except ValueError:
            host, port = None, None
        if not host or port is None:
            raise SparkUnavailable(f"Spark master {master!r}: {address!r} is not HOST:PORT")
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as error:
            reason = "no answer" if isinstance(error, TimeoutError) else (error.strerror or str(error))
            problems.append(f"{host}:{port}: {reason}")
    raise SparkUnavailable(f"Spark master {master} is unreachable ({'; '.join(problems)})")


def java_problem() -> str | None:
    """Why Spark could not start its JVM here (no java, or one older than Java 17), found without
    starting it, or None: the endpoint then runs continuous queries in-process."""
    try:
        check_java()
    except SparkUnavailable as error:
        return str(error)
    return None


def check_java() -> None:
    """The one check of the java Spark will start: $JAVA_HOME/bin/java when JAVA_HOME is set,
    else `java` on the PATH (pyspark's launcher, bin/spark-class, looks in that order)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if not os.access(java, os.X_OK):
            raise SparkUnavailable(
                f"JAVA_HOME is {home}, which has no bin/java: Spark needs Java 17 or later"
            )
        _check_java(str(java), f"JAVA_HOME is {home}, whose bin/java")
        return
    found = shutil.which("java")
    if found is None:
        raise SparkUnavailable("Spark needs Java 17 or later: JAVA_HOME is not set and java is not on PATH")
    _check_java(found, f"the java on PATH ({found})")


def _accepted(master: str) -> bool:
    """SparkSubmit's rule, and Spark's own forms for local masters (a bad one fails in the JVM)."""
    if master.startswith("local"):
        return bool(_LOCAL.match(master) or _LOCAL_CLUSTER.match(master))
    return master.startswith(_MASTER_PREFIXES)


def _check_java(java: str, described: str) -> None:
    """Run `java -version` (tens of milliseconds): a java that fails or is too old would make
    the launcher print its own lines before pyspark's one-line error."""
    needs = f"Spark needs Java {_MIN_JAVA} or later"
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SparkUnavailable(f"{described} does not run ({error}): {needs}") from None
    said = (done.stderr + done.stdout).strip()
    if done.returncode != 0:
        first = said.splitlines()[0] if said else "no output"
        raise SparkUnavailable(f"{described} fails (exit {done.returncode}: {first}): {needs}")
    major = _java_major(said)
    if major is not None and major < _MIN_JAVA:
        raise SparkUnavailable(f"{described} is Java {major}: {needs}")


def _java_major(version_text: str) -> int | None:
    """17 of `openjdk version "17.0.9"`, 8 of `java version "1.8.0_392"`."""
    found = _JAVA_VERSION.search(version_text)
    if found is None:
        return None
    return int(found.group(2) or 0) if found.group(1) == "1" else int(found.group(1))


def failure_message(error: BaseException) -> str:
    """What Spark says went wrong, in one line: the Java exception's own message where py4j
    carries one (py4j's is `An error occurred while calling ...`, the cause on later lines)."""
    java: Any = getattr(error, "java_exception", None)
    message = None
    if java is not None:
        try:
            message = java.getMessage() or java.toString()
        except Py4JError:  # the JVM is gone
            message = None
    text = str(message or error).strip()
    return " ".join(text.split("\n")[0].split()) or type(error).__name__


def _launch_jvm(settings: Mapping[str, str]) -> None:
    """Start the driver JVM as `SparkContext` would, but with its stderr read by a thread that
    passes every line on to ours except `_JVM_NOISE` (pyspark lets the JVM write to the
    terminal itself). Done before the first context only: later ones reuse the JVM."""
    if SparkContext._gateway is not None:
        return
    conf = SparkConf()
    for name, value in settings.items():
        conf.set(name, value)
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})  # type: ignore[no-untyped-call]
    stream = getattr(gateway, "proc", None)
    if stream is not None and stream.stderr is not None:
        threading.Thread(target=_pass_on, args=(stream.stderr,), name="rsep-jvm-stderr", daemon=True).start()
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def _pass_on(stream: IO[bytes]) -> None:
    """Copy the JVM's stderr to ours, line by line, leaving out `_JVM_NOISE`."""
    out = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else None
    for line in iter(stream.readline, b""):
        if line.startswith(_JVM_NOISE):
            continue
        if out is not None:
            out.write(line)
            out.flush()
        else:
            sys.stderr.write(line.decode(errors="replace"))


def _log_errors_of(logger: str, session: SparkSession) -> None:
    """Let `logger` log errors again (the log4j configuration keeps it off while Spark starts)."""
    jvm: Any = session.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    log4j.core.config.Configurator.setLevel(logger, log4j.Level.ERROR)


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
