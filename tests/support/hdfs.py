"""A real HDFS for the tests: a NameNode and a DataNode, each in a JVM of its own started from Hadoop's jars
(jvm/test-lib/hdfs-minicluster, fetched by `make test-jars`) with the main classes `hdfs namenode -format`,
`hdfs namenode` and `hdfs datanode` run, and a configuration written here as an operator writes it. Both bind to
and advertise one address: 127.0.0.1, or the host side of a veth pair, which a Spark worker in another network
namespace reaches. (Hadoop's MiniDFSCluster cannot serve there: it sets the NameNode's RPC address to 127.0.0.1
whatever the configuration says.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from supervise.kafka_broker import free_port
from tests.support.paths import REPO_ROOT

__all__ = ["JARS", "Hdfs", "hdfs_site", "running_hdfs"]

JARS = REPO_ROOT / "jvm" / "test-lib" / "hdfs-minicluster"
NAMENODE = "org.apache.hadoop.hdfs.server.namenode.NameNode"
DATANODE = "org.apache.hadoop.hdfs.server.datanode.DataNode"
START_TIMEOUT = 240.0
"""Seconds for the NameNode to come up and count its DataNode live (about 30 s on a loaded two-core machine)."""


@dataclass(frozen=True)
class Hdfs:
    uri: str
    """hdfs://<address>:<port>, the NameNode's RPC address."""
    conf: Path
    """The folder holding core-site.xml and hdfs-site.xml (the daemons' configuration; a client needs none of it)."""
    storage: Path
    """The folder with the NameNode's and the DataNode's files (a worker on another host must not see it)."""

    def shell(self, *args: str) -> str:
        """`hdfs dfs <args>` against this cluster (Hadoop's FsShell), its stdout; asserts it succeeded."""
        run = subprocess.run([_java(), "-cp", f"{self.conf}:{JARS}/*", "org.apache.hadoop.fs.FsShell", "-fs",
                              self.uri, *args], capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode == 0, run.stderr[-3000:]
        return run.stdout


def _java() -> str:
    java = shutil.which("java")
    assert java is not None, "no java on PATH"
    return java


def hdfs_site(host: str, rpc_port: int, http_port: int, storage: Path) -> dict[str, str]:
    """The daemons' settings: every address a client or the other daemon connects to is ``host`` (RPC, the
    DataNode's data transfer and IPC ports; the DataNode registers under that address, so the NameNode hands it to
    clients); the web servers stay on 127.0.0.1 (the readiness check reads the NameNode's JMX there)."""
    return {
        "dfs.namenode.rpc-address": f"{host}:{rpc_port}",
        "dfs.namenode.http-address": f"127.0.0.1:{http_port}",
        "dfs.namenode.name.dir": (storage / "name").as_uri(),
        "dfs.datanode.data.dir": (storage / "data").as_uri(),
        "dfs.datanode.address": f"{host}:0",
        "dfs.datanode.ipc.address": f"{host}:0",
        "dfs.datanode.http.address": "127.0.0.1:0",
        "dfs.datanode.hostname": host,
        "dfs.replication": "1",
        "dfs.namenode.datanode.registration.ip-hostname-check": "false",  # no reverse DNS of the test's address
        "dfs.namenode.safemode.extension": "0",
    }


def _write_conf(folder: Path, core: dict[str, str], hdfs: dict[str, str]) -> None:
    folder.mkdir(parents=True)
    for name, values in (("core-site.xml", core), ("hdfs-site.xml", hdfs)):
        properties = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                             for k, v in values.items())
        (folder / name).write_text(f"<configuration>\n{properties}</configuration>\n")


def _live_datanodes(http_port: int) -> int:
    """Live DataNodes the NameNode counts once out of safe mode (its JMX bean), 0 while it is not up."""
    url = f"http://127.0.0.1:{http_port}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            beans = json.loads(answer.read())["beans"]
    except (OSError, urllib.error.URLError, ValueError):
        return 0
    if not beans or beans[0].get("FSState") != "Operational":
        return 0
    return int(beans[0].get("NumLiveDataNodes", 0))


@contextmanager
def _daemon(name: str, conf: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen([_java(), "-Xmx384m", "-cp", f"{conf}:{JARS}/*", name], stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


@contextmanager
def running_hdfs(folder: Path, host: str = "127.0.0.1") -> Iterator[Hdfs]:
    """A formatted NameNode and one DataNode on ``host`` (RPC port of the system's choosing), files and logs in
    ``folder``; stopped (SIGTERM, then SIGKILL) on leaving."""
    assert any(JARS.glob("hadoop-client-minicluster-*.jar")), f"no Hadoop jars in {JARS}: run `make test-jars`"
    rpc_port, http_port = free_port(), free_port()
    conf, storage = folder / "conf", folder / "storage"
    _write_conf(conf, {"fs.defaultFS": f"hdfs://{host}:{rpc_port}", "hadoop.tmp.dir": str(storage / "tmp")},
                hdfs_site(host, rpc_port, http_port, storage))
    formatted = subprocess.run([_java(), "-cp", f"{conf}:{JARS}/*", NAMENODE, "-format", "-nonInteractive"],
                               capture_output=True, text=True, timeout=180, check=False)
    assert formatted.returncode == 0, formatted.stdout[-3000:] + formatted.stderr[-3000:]
    with ExitStack() as stack:
        daemons = [stack.enter_context(_daemon(main, conf, folder / f"{label}.log"))
                   for main, label in ((NAMENODE, "namenode"), (DATANODE, "datanode"))]
        deadline = time.monotonic() + START_TIMEOUT
        while _live_datanodes(http_port) < 1:
            for daemon, label in zip(daemons, ("namenode", "datanode"), strict=True):
                assert daemon.poll() is None, f"the {label} exited:\n" + (folder / f"{label}.log").read_text()[-3000:]
            assert time.monotonic() < deadline, f"HDFS did not start in {START_TIMEOUT:.0f} s"
            time.sleep(0.5)
        yield Hdfs(f"hdfs://{host}:{rpc_port}", conf, storage)
