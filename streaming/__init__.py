"""The Spark side: one Spark session factory, the job's settings, its two stateful operators and the job.

Only this package imports pyspark; the modules that do (spark_session, processors, lanes, pipeline, job) are
imported lazily so that `pubsub --help` and the producers start without a JVM. What starts the broker or a
cluster around the job is in ``supervise``.
"""
