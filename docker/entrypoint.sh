#!/bin/sh
# The image's entrypoint: one image, three roles (docker/compose.yaml).
#
#   entrypoint.sh master [ARGS...]       a Spark standalone master (spark-class ...Master)
#   entrypoint.sh worker [MASTER_URL]    a Spark standalone worker (spark-class ...Worker)
#   entrypoint.sh [rsep ARGS...]         rsep itself (default: the endpoint, `rsep serve ...`)
#
# Spark comes with pyspark: SPARK_HOME is pyspark's folder unless set. Ports, cores and memory
# come from the environment (defaults in brackets):
#   master: SPARK_MASTER_HOST [0.0.0.0], SPARK_MASTER_PORT [7077], SPARK_MASTER_WEBUI_PORT [8080]
#   worker: SPARK_MASTER_URL [spark://spark-master:7077], SPARK_WORKER_HOST [0.0.0.0],
#           SPARK_WORKER_PORT [0: any], SPARK_WORKER_WEBUI_PORT [8081], SPARK_WORKER_CORES [1],
#           SPARK_WORKER_MEMORY [1g], SPARK_WORKER_DIR [$HOME/spark-work]
# RSEP_PYTHON names the interpreter that has rsep and pyspark [python]. The daemons run in the
# foreground (exec), so the container stops with them and its signals reach them.
set -eu

python="${RSEP_PYTHON:-python}"
if [ -z "${SPARK_HOME:-}" ]; then
    SPARK_HOME="$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
    export SPARK_HOME
fi
# Spark's daemons run Python workers for the jobs they host: the interpreter that has rsep.
PYSPARK_PYTHON="${PYSPARK_PYTHON:-$(command -v "$python")}"
export PYSPARK_PYTHON

role="${1:-serve}"
case "$role" in
    master)
        shift
        exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
            --host "${SPARK_MASTER_HOST:-0.0.0.0}" \
            --port "${SPARK_MASTER_PORT:-7077}" \
            --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}" "$@"
        ;;
    worker)
        shift
        master="${1:-${SPARK_MASTER_URL:-spark://spark-master:7077}}"
        work="${SPARK_WORKER_DIR:-${HOME:-/tmp}/spark-work}"
        mkdir -p "$work"
        exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
            --host "${SPARK_WORKER_HOST:-0.0.0.0}" \
            --port "${SPARK_WORKER_PORT:-0}" \
            --webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}" \
            --cores "${SPARK_WORKER_CORES:-1}" \
            --memory "${SPARK_WORKER_MEMORY:-1g}" \
            --work-dir "$work" \
            "$master"
        ;;
    *)
        exec "$python" -m rsep.endpoint.cli "$@"
        ;;
esac
