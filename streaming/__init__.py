"""The Spark side: the embedded Kafka broker, one Spark session factory, a standalone cluster helper, and the job.

Only this package imports pyspark; the modules that do (spark_session, cluster, pipeline, job) are imported
lazily so that `pubsub --help` and the producers start without a JVM.
"""
