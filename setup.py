"""Build: the protocol's modules compiled to C extensions by mypyc, from the same typed source.

The profile of the simulator is flat (no single function dominates), so no hand-written hot path can bring
a large gain; compiling the strictly typed protocol code does, without changing a line of what it
says. Modules stay pure Python where compiling breaks a Python behaviour the job relies on (see ``PURE``).
``PUBSUB_PURE_PYTHON_BUILD=1`` builds without compiling; ``PUBSUB_PURE_PYTHON=1`` at run time ignores a
compiled build (state/native.py). The suite runs both ways and checks they agree byte for byte.

mypyc leaves a dataclass's generated ``__init__`` interpreted, many times slower than one written out
(docs/benchmarks.md, "Measured code choices"), so the records built per trie node, path step or key write theirs out.

A compiled build writes ``state/native_build.txt``, the SHA-256 of every source it compiled: a process
runs the compiled modules only while every one of those sources is unchanged (an edited source runs as
Python until the next build), so what runs is always what the source says.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from setuptools import Extension, setup

ROOT = Path(__file__).parent
MANIFEST = ROOT / "state" / "native_build.txt"
COMPILED_PACKAGES = ("pubsub_core", "state")
PURE = {
    # Package roots: they decide, before anything compiled loads, whether to load the compiled modules.
    "pubsub_core/__init__.py",
    "state/__init__.py",
    "state/native.py",
    # Process-wide settings (the garbage collector's schedule), applied once per process.
    "pubsub_core/process.py",
    # Protocols (mypyc cannot compile @runtime_checkable).
    "state/interface.py",
    "pubsub_core/router/interfaces.py",
    # Configuration travels to Spark's Python workers inside the pickled operators; a compiled frozen
    # dataclass cannot be unpickled (its __setstate__ assigns to frozen fields). Read once, never hot.
    "pubsub_core/stages/config.py",
    "pubsub_core/broadcaster/config.py",
    "pubsub_core/router/config.py",
    "pubsub_core/subscriber/config.py",
    # The simulator driver: benchmarks subclass it (compiled classes refuse interpreted subclasses) and
    # the fuzzer forks it; its own work is a loop over compiled stages.
    "pubsub_core/simulator/simulator.py",
    "pubsub_core/simulator/__init__.py",
    # Errors and events: class attributes overridden per subclass (compiled, they become instance slots),
    # raised or built once per failure or event, not per node.
    "pubsub_core/broadcaster/events.py",
}


def compiled_modules() -> list[str]:
    """The source files mypyc compiles: every protocol module but those kept pure above."""
    sources = sorted(str(p.relative_to(ROOT)) for package in COMPILED_PACKAGES for p in (ROOT / package).rglob("*.py"))
    return [s for s in sources if s not in PURE and not s.endswith("errors.py")]


def remove_orphans() -> None:
    """Delete compiled modules whose source is gone (a module moved or removed): left in place, they would still
    import under their old name."""
    for package in COMPILED_PACKAGES:
        for built in (ROOT / package).rglob("*.so"):
            if not built.with_name(built.name.split(".", 1)[0] + ".py").exists():
                built.unlink()


def extensions() -> list[Extension]:
    """The compiled modules, recorded in the manifest; none (and no manifest) for a pure-Python build."""
    MANIFEST.unlink(missing_ok=True)
    remove_orphans()
    if os.environ.get("PUBSUB_PURE_PYTHON_BUILD") == "1":
        return []
    from mypyc.build import mypycify

    modules = compiled_modules()
    built = list(mypycify(modules, opt_level="3", group_name="pubsub_native"))
    for extension in built:
        extension.optional = True  # no C compiler: a warning per module, and the pure build is installed
    MANIFEST.write_text("".join(f"{hashlib.sha256((ROOT / m).read_bytes()).hexdigest()} {m}\n" for m in modules))
    return built


setup(ext_modules=extensions())
