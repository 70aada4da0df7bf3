"""What writes to and reads from Kafka outside the job: the Kafka I/O (``transport``), what writes a realm
(``writers``: the event-log producer, the live workload, the block author, the void order), what reads one back
(``readers``), the public client API (``client``), the seeded workload generator (``workload``) and the record
schemas (``schemas``)."""
