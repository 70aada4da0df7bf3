"""The project and its Python dependencies sent to executors the Spark way: this venv packed (venv-pack) into an
archive that Spark unpacks in each executor's working folder (``spark.archives``, alias ``environment``), whose
interpreter then runs the Python workers. An executor host needs Java, its own Spark (which provides pyspark
itself, ``$SPARK_HOME/python/lib/pyspark.zip``) and CPython of the driver's minor version at the path the venv's
interpreter links to; nothing of ours. docs/decisions.md says why an archive and not ``--py-files``.

The driver's side of a transformWithState query also starts a Python worker (to collect the state schemas) with
the same relative interpreter path, resolved against the driver JVM's working folder: ``driver_folder`` holds an
``environment`` link to this venv, and the JVM is started there.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sys
import sysconfig
from pathlib import Path

from settings.paths import runtime_dir
from streaming.errors import ShippingError

__all__ = ["ARCHIVE_ALIAS", "EXCLUDED", "EXECUTOR_PYTHON", "driver_folder", "editable_install", "environment_key",
           "pack_environment", "shipping_conf", "wants_archive"]

ARCHIVE_ALIAS = "environment"
EXECUTOR_PYTHON = f"./{ARCHIVE_ALIAS}/bin/python"
"""The interpreter executors run, inside the unpacked archive (relative to the executor's working folder)."""
EXCLUDED = ("lib/python*/site-packages/pyspark/*", "lib/python*/site-packages/pyspark-*.dist-info/*",
            "lib/python*/site-packages/py4j/*", "lib/python*/site-packages/py4j-*.dist-info/*")
"""Left out of the archive: each executor host's own Spark puts its pyspark and py4j first on the workers' path
anyway (and pyspark's jars alone are about 450 MB)."""
DISTRIBUTION = "rfc0160-pubsub"


def editable_install(module_file: Path = Path(__file__)) -> bool:
    """Whether the project runs from a checkout (an editable install, or the source tree on the path) rather than
    from a wheel in this venv's site-packages: venv-pack cannot pack a checkout. Decided by where the code is loaded
    from (``module_file``, this module), not by the distribution's metadata: a checkout's own ``*.egg-info`` folder,
    first on the path when run from the checkout, carries no editable marker."""
    here = module_file.resolve()
    installed = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    return not any(folder in here.parents for folder in installed)


def wants_archive(mode: str, master: str) -> bool:
    """Whether ``mode`` (one of ``settings.settings.SHIP_MODES``) ships the packed venv to ``master``'s executors."""
    if mode == "auto":
        return master.startswith("spark://") and not editable_install()
    return mode == "archive"


def environment_key(prefix: Path) -> str:
    """What identifies the venv's contents: every installed distribution's name and version, and the project's own
    RECORD (a hash per file), so a rebuilt wheel gets a new archive."""
    digest = hashlib.sha256(str(prefix).encode())
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower()):
        digest.update(f"{dist.metadata['Name']}=={dist.version}\n".encode())
        if (dist.metadata["Name"] or "").lower() == DISTRIBUTION:
            digest.update((dist.read_text("RECORD") or "").encode())
    return digest.hexdigest()[:16]


def pack_environment(prefix: Path | None = None, output: Path | None = None) -> Path:
    """This venv (``prefix``) packed with venv-pack as a .tar.gz (permissions and the interpreter link kept), made
    once per ``environment_key`` under the runtime folder unless ``output`` is given; its path."""
    import venv_pack

    venv = Path(prefix or sys.prefix)
    if venv == Path(sys.base_prefix) and prefix is None:
        raise ShippingError(venv, "the job does not run in a virtual environment; install the wheel into one")
    if prefix is None and editable_install():
        raise ShippingError(venv, "the project is installed in editable mode (a checkout); install the wheel into "
                                  "a venv (`pip install rfc0160-pubsub-*.whl`) or use --ship shared")
    target = output or runtime_dir() / "ship" / f"env-{environment_key(venv)}.tar.gz"
    if output is None and target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    try:
        venv_pack.pack(prefix=str(venv), output=str(partial), format="tar.gz", force=True,
                       filters=[("exclude", pattern) for pattern in EXCLUDED])
    except venv_pack.VenvPackException as exc:
        partial.unlink(missing_ok=True)
        raise ShippingError(venv, str(exc)) from exc
    os.replace(partial, target)
    return target


def driver_folder() -> Path:
    """The driver JVM's working folder: an ``environment`` link to this venv, so the interpreter path shipped with
    every Python function (``EXECUTOR_PYTHON``) also resolves on the driver."""
    folder = runtime_dir() / "driver"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / ARCHIVE_ALIAS
    if not (link.is_symlink() and Path(os.readlink(link)) == Path(sys.prefix)):
        spare = folder / f".{ARCHIVE_ALIAS}.{os.getpid()}"
        spare.unlink(missing_ok=True)
        spare.symlink_to(sys.prefix, target_is_directory=True)
        os.replace(spare, link)
    return folder


def shipping_conf(archive: Path) -> dict[str, str]:
    """The confs that ship ``archive`` and run the executors' Python workers from it."""
    return {
        "spark.archives": f"{archive}#{ARCHIVE_ALIAS}",
        "spark.pyspark.python": EXECUTOR_PYTHON,
        "spark.executorEnv.PYSPARK_PYTHON": EXECUTOR_PYTHON,
    }
