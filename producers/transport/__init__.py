"""Kafka I/O of the commands, the readers and the writers: typed clients that send and read records, and the
topics (their limits, configs and client settings)."""
