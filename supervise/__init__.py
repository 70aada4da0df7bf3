"""What supervises several parts: the embedded Kafka broker, a local standalone Spark cluster, a live run's
processes (producer, author, job, follower) and `pubsub verify` (a log through Kafka and the job, checked against
the simulator)."""
