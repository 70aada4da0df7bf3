"""What writes a realm: the event-log producer, the live workload, the block author and its snapshot, and the
void order."""
