"""Errors of the state layer: their own root, since state/ imports nothing from pubsub_core."""


class StateError(Exception):
    """Base class for state-layer errors."""


class TransactionClosedError(StateError):
    """A state transaction was used after commit or rollback."""

    def __init__(self, status: str) -> None:
        super().__init__(f"the state transaction is {status}; open a new one")
        self.status = status
