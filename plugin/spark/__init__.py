"""The Spark stage: the only part of rsep that imports pyspark.

`SparkReplay` distributes the replay (GPM stage on executors, one NFA per
partition key after a shuffle by key); `get_session` creates the session it
runs on. The per-key adapter in `adapter` is pyspark-free.
"""

from rsep.plugin.spark.session import get_session, stop_session
from rsep.plugin.spark.stage import GpmStage, SparkReplay

__all__ = ["GpmStage", "SparkReplay", "get_session", "stop_session"]
