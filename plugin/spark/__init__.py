"""The Spark stage: the only part of rsep that imports pyspark.

`stage.SparkReplay` distributes the replay (GPM stage on executors, one NFA per partition key
after a shuffle by key); `streaming_engine.SparkStreamingEngine` runs continuous queries on
Structured Streaming; `session.get_session` creates the session both run on, after the one check
of Java (`session.check_java`). The per-key functions in `adapter` and `stream_stages` are
pyspark-free, so they run (and are tested) without a SparkSession. Nothing is imported here:
importing the package starts no JVM and needs no pyspark.
"""
