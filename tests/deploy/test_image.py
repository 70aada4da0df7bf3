"""docker/Dockerfile without a Docker engine: its build stage replayed on a folder standing for that stage's /app.

The build stage's COPY steps are done as Docker does them (the build context minus .dockerignore), each
``RUN make ...`` step is planned with ``make -n`` on the folder as it is at that step, and the JVM targets of the
plan are built for real (Maven offline, from the local repository `make setup` filled; javac): the jars the job's
Spark settings and the embedded broker require must then be where the code looks for them. What needs the image's
own Python (the venv, the mypyc build, the wheel) is checked as a plan only; the venv is this test's interpreter.
The image stage must install the wheel the build stage made (tests/integration/test_package.py installs one for
real). docker-compose.yml is validated with `docker compose config` where the Docker CLI has its compose plugin.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from settings.errors import JarsMissingError
from streaming.spark_session import LOG4J2_CONF, connector_jars, local_file_system_jar, pyspark_package_dir
from supervise.kafka_broker import EmbeddedKafka

REPO = Path(__file__).resolve().parents[2]
MAKE_ENV = {name: value for name, value in os.environ.items() if name not in {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
"""A make of its own, whether or not the tests run under `make test` (no inherited jobserver or level)."""
DOCKERFILE = REPO / "docker" / "Dockerfile"
COMPOSE = REPO / "docker-compose.yml"


@dataclass(frozen=True)
class Instruction:
    name: str
    argument: str


def instructions() -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined and comments dropped."""
    joined: list[str] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    return [Instruction(*(text.split(None, 1) + [""])[:2]) for text in joined]


def stages() -> list[list[Instruction]]:
    """The instructions of each stage, each starting with its FROM."""
    found: list[list[Instruction]] = []
    for step in instructions():
        if step.name == "FROM":
            found.append([])
        found[-1].append(step)
    return found


def ignored(relative: str, patterns: list[str]) -> bool:
    """Whether .dockerignore's ``patterns`` leave ``relative`` (or a folder above it) out of the build context."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        for prefix in prefixes:
            if fnmatch.fnmatchcase(prefix, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatchcase(prefix.rsplit("/", 1)[-1], pattern[3:])
            ):
                return True
    return False


def dockerignore() -> list[str]:
    return [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def copy_step(argument: str, app: Path, patterns: list[str]) -> None:
    """``COPY src... dest`` from the repository (the build context) into ``app`` (the image's WORKDIR)."""
    *sources, dest = shlex.split(argument)
    assert not any(s.startswith("--") for s in sources), f"COPY flags are not replayed here: {argument}"
    for source in sources:
        origin = REPO / source
        assert origin.exists(), f"COPY {source}: not in the build context"
        if origin.is_file():
            placed = app / dest / origin.name if dest.endswith("/") else app / dest
            if not ignored(source, patterns):
                placed.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, placed)
            continue
        for path in origin.rglob("*"):
            relative = path.relative_to(REPO).as_posix()
            if path.is_file() and not path.is_symlink() and not ignored(relative, patterns):
                placed = app / dest / path.relative_to(origin)
                placed.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, placed)


def make_targets(command: str) -> list[list[str]]:
    """The target lists of each ``make`` a RUN command runs (``make a b && rm ...`` -> [["a", "b"]])."""
    found = []
    for part in re.split(r"&&|;|\|\|", command):
        words = shlex.split(part)
        if words and words[0] == "make":
            found.append([w for w in words[1:] if not w.startswith("-") and "=" not in w] or ["setup"])
    return found


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[list[str], str]]]:
    """The Dockerfile's steps replayed into a folder standing for /app: (the folder, each make step's targets
    with its ``make -n`` plan made on the folder as it was at that step)."""
    app = tmp_path_factory.mktemp("image") / "app"
    app.mkdir()
    patterns = dockerignore()
    plans = []
    for step in stages()[0]:
        if step.name == "COPY":
            copy_step(step.argument, app, patterns)
        elif step.name == "RUN":
            for targets in make_targets(step.argument):
                done = subprocess.run(["make", "-n", *targets], cwd=app, capture_output=True, text=True, check=False,
                                      env=MAKE_ENV)
                assert done.returncode == 0, f"RUN make {' '.join(targets)} cannot be planned:\n{done.stderr}"
                plans.append((targets, done.stdout))
    return app, plans


def test_the_image_installs_the_wheel_the_build_stage_made_with_its_venv_on_the_path() -> None:
    build, image = stages()
    assert build[0].argument.endswith(" AS build") and [s.argument for s in build if s.name == "WORKDIR"] == ["/app"]
    assert ["dist"] in [t for s in build if s.name == "RUN" for t in make_targets(s.argument)]
    python = re.fullmatch(r"python:(\d+\.\d+)-\S+", image[0].argument)
    assert python is not None and build[0].argument.startswith(image[0].argument)  # one Python for wheel and image
    assert [s.argument for s in image if s.name == "COPY"] == ["--from=build /app/dist/ /tmp/dist/"]
    install = next(s.argument for s in image if s.name == "RUN" and "pip install" in s.argument)
    assert "python -m venv /opt/pubsub" in install and "/opt/pubsub/bin/pip install /tmp/dist/*.whl" in install
    env = " ".join(s.argument for s in image if s.name == "ENV")
    assert "PATH=/opt/pubsub/bin:" in env and "PUBSUB_RUNTIME_DIR=/data" in env  # `pubsub` from the wheel
    links = next(s.argument for s in image if s.name == "RUN" and "/opt/spark-home" in s.argument)
    assert f"/opt/pubsub/lib/python{python.group(1)}/site-packages/pyspark/" in links


def test_the_make_steps_build_everything_make_setup_builds(replay: tuple[Path, list[tuple[list[str], str]]]) -> None:
    app, plans = replay
    assert any("dist" in targets for targets, _ in plans), "no RUN step runs `make dist` (setup, then the wheel)"
    plan = "\n".join(text for _, text in plans)
    assert "build_wheel" in plan and "build_sdist" in plan
    assert "pip install --quiet --disable-pip-version-check -e '.[dev]'" in plan  # the venv, pinned packages
    assert "--no-build-isolation --no-deps -e ." in plan  # the mypyc build
    assert "mvn -B -q -Dstyle.color=never -f jvm/pom.xml dependency:copy-dependencies" in plan
    assert "jar --create --file jvm/lib/local-fs/pubsub-local-fs.jar" in plan
    java_sources = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "jvm" / "local-fs").rglob("*.java"))
    assert java_sources and all(source in plan for source in java_sources)
    for source in java_sources:  # javac finds them: copied before the step that compiles them
        assert (app / source).is_file()


def test_every_package_the_project_installs_is_copied(replay: tuple[Path, list[tuple[list[str], str]]]) -> None:
    app, _ = replay
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = [name.rstrip("*") for name in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    for name in packages:
        assert (app / name / "__init__.py").is_file(), f"the image lacks the package {name}"
    assert (app / project["project"]["readme"]).is_file()
    assert (app / LOG4J2_CONF.relative_to(REPO)).is_file()
    assert not list(app.rglob("*.so")) and not (app / "jvm" / "lib").exists()  # nothing built on the host


@pytest.mark.slow
def test_the_jars_the_job_and_the_broker_require_come_out_of_the_make_steps(
    replay: tuple[Path, list[tuple[list[str], str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    app, plans = replay
    jvm_targets = ["jvm/lib/.fetched", "jvm/lib/local-fs/pubsub-local-fs.jar"]
    plan = "\n".join(text for _, text in plans)
    assert "touch jvm/lib/.fetched" in plan and "--file jvm/lib/local-fs/pubsub-local-fs.jar" in plan
    venv = app / ".venv"  # this interpreter stands for the image's venv: javac reads pyspark's Hadoop jar from it
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".installed").touch()
    (app / "jvm" / ".mvn").mkdir()
    (app / "jvm" / ".mvn" / "maven.config").write_text("-o\n")  # offline: the jars come from ~/.m2, never the network
    done = subprocess.run(["make", "-o", ".venv/.installed", *jvm_targets], cwd=app, capture_output=True, text=True,
                          check=False, env=MAKE_ENV)
    assert done.returncode == 0, f"the JVM targets did not build (is ~/.m2 filled by `make setup`?):\n{done.stderr[-3000:]}"

    monkeypatch.setenv("PUBSUB_JARS_DIR", str(app / "jvm" / "lib"))
    assert Path(local_file_system_jar()) == app / "jvm" / "lib" / "local-fs" / "pubsub-local-fs.jar"
    assert any("spark-sql-kafka-0-10" in Path(jar).name for jar in connector_jars())
    assert all(Path(jar).parent == app / "jvm" / "lib" / "spark-kafka" for jar in connector_jars())
    assert EmbeddedKafka(home=app / "kafka-home")._classpath() == str(app / "jvm" / "lib" / "kafka" / "*")


def test_without_the_jars_the_error_names_the_make_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUBSUB_JARS_DIR", str(tmp_path))
    with pytest.raises(JarsMissingError) as caught:
        local_file_system_jar()
    assert "make setup" in str(caught.value) and "jvm/lib/local-fs/pubsub-local-fs.jar" in str(caught.value)
    with pytest.raises(JarsMissingError) as caught:
        connector_jars()
    assert "make setup" in str(caught.value) and "jvm/lib/.fetched" in str(caught.value)


def test_the_compose_services_run_commands_the_image_has() -> None:
    from tests.deploy.test_compose import _services

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    for service, argv in _services().items():
        if not argv:
            continue  # kafka: its own image
        if argv[0] == "spark-class":
            assert (pyspark_package_dir() / "bin" / "spark-class").is_file()  # linked into SPARK_HOME/bin
        else:
            assert argv[0] in scripts, f"service {service} runs {argv[0]}, which the image does not install"


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker is not None and subprocess.run([docker, "compose", "version"], capture_output=True,
                                             check=False).returncode == 0:
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone is not None else None


def test_docker_compose_config_accepts_the_compose_file() -> None:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no `docker compose` here (the Docker CLI without its compose plugin, or no Docker CLI): the "
                    "compose file is checked against the pubsub CLI by tests/deploy/test_compose.py only")
    done = subprocess.run([*cli, "-f", str(COMPOSE), "config", "--quiet"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
