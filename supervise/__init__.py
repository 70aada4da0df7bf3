"""What supervises several parts: the embedded Kafka broker, a local standalone Spark cluster, a live run's
processes (producer, author, job, follower), `pubsub verify` (a log through Kafka and the job, checked against
the simulator) and `pubsub status` (a realm's facts from a running job's metrics, else its topics and checkpoint)."""
