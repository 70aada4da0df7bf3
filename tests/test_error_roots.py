"""Every exception class a runtime package defines derives from that package's error root, so a caller can catch
one package's failures with one ``except``. Private classes (a leading underscore) are control flow inside their
module, never raised out of it; warnings are not errors."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from producers.errors import ProducerError
from pubsub_core.errors import PubSubError
from settings.errors import SetupError
from state.errors import StateError
from streaming.errors import StreamingError
from supervise.errors import SuperviseError

ROOTS: dict[str, type[BaseException]] = {
    "pubsub_core": PubSubError,
    "state": StateError,
    "settings": SetupError,
    "streaming": StreamingError,
    "producers": ProducerError,
    "supervise": SuperviseError,
    "cli": PubSubError,  # cli has no errors of its own: it reports the packages'
}


def exception_classes(package: str) -> list[type[BaseException]]:
    """The exception classes defined (not imported) in every module of ``package``."""
    root = importlib.import_module(package)
    modules = [root, *(importlib.import_module(info.name)
                       for info in pkgutil.walk_packages(root.__path__, f"{package}."))]
    return [obj for module in modules for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__]


@pytest.mark.parametrize("package", sorted(ROOTS))
def test_every_error_is_under_its_package_root(package: str) -> None:
    found = exception_classes(package)
    outside = [f"{cls.__module__}.{cls.__qualname__}" for cls in found
               if not cls.__name__.startswith("_") and not issubclass(cls, Warning)
               and not issubclass(cls, ROOTS[package])]
    assert found or package == "cli", "the walk found no exception class: it did not read the package"
    assert outside == [], f"not under {ROOTS[package].__name__}: {outside}"
