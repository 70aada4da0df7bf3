"""The one line a failed query ends ``pubsub job`` with (``streaming.job.query_failed``)."""

from __future__ import annotations

from streaming.job import cause_chain, query_failed

SPARK_LINE = ("[STREAM_FAILED] Query [id = 8d7d6720, runId = 4a3c608f] terminated with exception: "
              "[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state.")


def test_a_long_root_cause_keeps_its_reason_at_the_end() -> None:
    path = "/tmp/spark-c6ac6911/StateStoreId(opId=0,partId=1,name=default)-7fc93ccf/workingDir-8c1e6d32" * 3
    root = ("org.rocksdb.RocksDBException: Found options incompatible with filesystem: IO error: While open a file "
            f"for random read: {path}/CURRENT: Too many open files")
    failed = query_failed(RuntimeError(), [SPARK_LINE + "\n== Plan ==\n...", "wrapper", root])
    assert failed.root_cause is not None and len(failed.root_cause) <= 300 < len(root)
    assert failed.root_cause.startswith("org.rocksdb.RocksDBException: ")
    assert failed.root_cause.endswith("/CURRENT: Too many open files")
    assert "Too many open files" in str(failed) and "== Plan ==" not in str(failed)


def test_short_lines_are_kept_whole() -> None:
    failed = query_failed(RuntimeError(), [SPARK_LINE, "java.net.SocketException: Too many open files"])
    assert failed.message == SPARK_LINE
    assert failed.root_cause == "java.net.SocketException: Too many open files"


def test_a_store_refused_as_too_new_in_a_worker_is_named_by_its_own_line() -> None:
    python = ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
              '  File "/x/streaming/operators.py", line 210, in subscriber_chunks\n'
              "state.formats.FormatTooNewError: seam record (relay-views): format version 3, written by release "
              "9.0.0; release 0.2.0 reads up to version 2 (install 9.0.0 or later, or restore the store kept from "
              "before the upgrade)\n")
    failed = query_failed(RuntimeError(), [SPARK_LINE, "wrapper", python])
    assert failed.message.startswith("seam record (relay-views): format version 3, written by release 9.0.0; ")
    assert failed.root_cause is None and "\n" not in str(failed)


class _CapturedWithoutGateway(Exception):
    """A failed query as PySpark raises it once the gateway cannot be read: its Java origin unreachable, the stack
    trace it captured when it raised still at hand."""

    def __init__(self, desc: str, stack_trace: str) -> None:
        super().__init__(desc)
        self._stackTrace = stack_trace
        self._origin = self

    def toString(self) -> str:  # noqa: N802 - the Java method py4j would call
        raise ConnectionError("An error occurred while trying to connect to the Java server")


def test_a_root_cause_is_read_from_the_captured_trace_when_the_gateway_cannot_be_read() -> None:
    trace = ("org.apache.spark.sql.streaming.StreamingQueryException: " + SPARK_LINE + "\n"
             "\tat org.apache.spark.sql.execution.streaming.StreamExecution.runStream(StreamExecution.scala:372)\n"
             "Caused by: org.apache.spark.SparkException: [CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred\n"
             "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.cannotLoadStore(QueryExecutionErrors.scala:2650)\n"
             "Caused by: java.io.FileNotFoundException: /tmp/spark-1/state/0/1/1.delta (Too many open files)\n"
             "\t... 30 more\n")
    error = _CapturedWithoutGateway(SPARK_LINE, trace)
    chain = cause_chain(error)
    assert chain == [SPARK_LINE,
                     "org.apache.spark.SparkException: [CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred",
                     "java.io.FileNotFoundException: /tmp/spark-1/state/0/1/1.delta (Too many open files)"]
    failed = query_failed(error, chain)
    assert failed.root_cause == "java.io.FileNotFoundException: /tmp/spark-1/state/0/1/1.delta (Too many open files)"
    assert "Too many open files" in str(failed) and "\n" not in str(failed)
