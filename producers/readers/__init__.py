"""What reads a realm back: following updates once each, exporting input topics as an event log, the newest
facts from the topics' tails, block-to-update latency, and the lines of an event log file."""
