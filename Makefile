# Two commands do everything on a fresh machine, and are safe to run again:
#   make demo   set up, then run the protocol through Kafka and the Spark job on the embedded broker, checked
#   make test   set up, then run the whole test suite (Kafka and Spark tests included)
# The inner loop while editing: `make check` (lint, strict mypy over the code and the tests, and the tests that
# need neither Kafka nor Spark).
# `make setup` alone creates .venv (pip install -e '.[dev]'), compiles the protocol with mypyc (`make native`,
# redone when a protocol source changes) and fetches the JVM jars with Maven into jvm/lib/, which settings/jars
# links to (where an installed wheel carries them). `make dist` builds the wheel and the sdist into dist/.
# Every target runs with the checkout's .runtime/ as the runtime folder (brokers, checkpoints, logs), unless
# PUBSUB_RUNTIME_DIR names another; an installed package uses the per-user data folder (docs/operations.md).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PY_STAMP := $(VENV)/.installed
JAR_STAMP := jvm/lib/.fetched
TEST_JAR_STAMP := jvm/test-lib/.fetched
NATIVE_STAMP := build/.native
PROTOCOL_SOURCES := setup.py $(shell find pubsub_core state -name '*.py' 2>/dev/null)
POMS := jvm/pom.xml jvm/kafka-broker/pom.xml jvm/spark-kafka/pom.xml
LOCAL_FS_SOURCES := $(shell find jvm/local-fs/src -name '*.java' 2>/dev/null)
LOCAL_FS_JAR := jvm/lib/local-fs/pubsub-local-fs.jar
PYTEST_ARGS ?=
JARS_LINK := settings/jars
export PUBSUB_RUNTIME_DIR ?= $(CURDIR)/.runtime

.PHONY: setup test-jars native demo test check lint typecheck broker-stop clean-runtime check-tools dist class-archive

setup: check-tools $(PY_STAMP) $(NATIVE_STAMP) $(JAR_STAMP) $(LOCAL_FS_JAR) $(JARS_LINK)
native: $(NATIVE_STAMP)
test-jars: $(TEST_JAR_STAMP)

# Java 17+ and Maven come from the distribution, and Prometheus (the metrics test scrapes the live job with it;
# the package's own service, which would listen on every interface, is disabled); installed here only when
# missing and we may (root + apt-get).
check-tools:
	@if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless maven; \
	  else echo "make setup: install Java 17+ and Maven (e.g. apt-get install openjdk-17-jdk-headless maven)"; exit 1; fi; \
	fi
	@if ! command -v prometheus >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; \
	    if command -v systemctl >/dev/null; then systemctl disable --now prometheus >/dev/null 2>&1 || true; fi; \
	  else echo "make setup: install Prometheus (e.g. apt-get install prometheus)"; exit 1; fi; \
	fi
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "make setup: Python >= 3.11 is needed as $(PYTHON)"; exit 1; }

$(PY):
	$(PYTHON) -m venv $(VENV)

# Dependencies first, without compiling; then the compiled build in place, with the venv's own pinned mypy.
$(PY_STAMP): pyproject.toml | $(PY)
	PUBSUB_PURE_PYTHON_BUILD=1 $(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@# That install drops the compiled build's manifest; an extension module left without it would load as if
	@# current (`make check` runs without `make native`), so none is left. `make native` builds them again.
	find pubsub_core state -name '*.so' -delete
	rm -f pubsub_native__mypyc*.so
	touch $@

# mypyc: the protocol's modules as C extensions beside their sources (setup.py says which and why), about
# 90 s on two cores. A process finding a compiled module's source changed since the build runs the source
# (state/native.py).
$(NATIVE_STAMP): $(PROTOCOL_SOURCES) $(PY_STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e .
	mkdir -p build && touch $@

# Re-fetched only when a pom changes; the old jars are removed first so no stale version lingers.
$(JAR_STAMP): $(POMS)
	rm -rf jvm/lib/kafka jvm/lib/spark-kafka
	mvn -B -q -Dstyle.color=never -f jvm/pom.xml dependency:copy-dependencies
	touch $@

# Test-only jars, never in the wheel: Hadoop's NameNode and DataNode for the tests of a checkpoint on HDFS
# (tests/support/hdfs.py starts them for tests/integration/test_hdfs_checkpoint.py and test_other_host.py).
$(TEST_JAR_STAMP): jvm/pom.xml jvm/hdfs-minicluster/pom.xml
	rm -rf jvm/test-lib/hdfs-minicluster
	mvn -B -q -Dstyle.color=never -f jvm/hdfs-minicluster/pom.xml dependency:copy-dependencies
	touch $@

# Hadoop's local file system without a chmod process per file (jvm/local-fs says why), compiled against the
# Hadoop API jar of the pinned pyspark.
$(LOCAL_FS_JAR): $(LOCAL_FS_SOURCES) $(PY_STAMP)
	rm -rf build/local-fs && mkdir -p build/local-fs $(dir $@)
	javac --release 17 -Xlint:all -Werror -d build/local-fs \
	  -cp "$$($(PY) -c 'import pathlib, pyspark; print(*(pathlib.Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))')" \
	  $(LOCAL_FS_SOURCES)
	jar --create --file $@ -C build/local-fs .

# The package's jar folder (package data: the wheel carries the jars) is jvm/lib in the checkout.
# The class data sharing archive of Spark's driver JVM that a (re)started job maps (docs/operations.md, "After a
# crash"): only on request, as it runs a Spark session for a minute or two.
class-archive: setup
	$(PY) -m cli.main job --write-class-archive

$(JARS_LINK):
	ln -sfn ../jvm/lib $@

# The wheel (with the compiled protocol when a C compiler is there: setup.py) and the sdist, through setuptools'
# own build hooks with the venv's pinned setuptools and mypy; both carry the jars of `make setup`. (Each build
# rewrites state/native_build.txt for the same sources, so the checkout's compiled modules stay in use.)
dist: setup
	rm -rf dist build/lib* build/bdist*
	PUBSUB_PURE_PYTHON_BUILD=1 $(PY) -c 'from setuptools import build_meta as b; print(b.build_sdist("dist"))'
	$(PY) -c 'from setuptools import build_meta as b; print(b.build_wheel("dist"))'

demo: setup
	$(VENV)/bin/pubsub demo

# The whole suite on the compiled build, then the protocol's tests again on the pure-Python source
# (PUBSUB_PURE_PYTHON=1), so both builds are held to the same tests; tests/native checks they agree.
test: setup $(TEST_JAR_STAMP)
	$(PY) -m pytest tests -q -ra --durations=10 -p no:cacheprovider $(PYTEST_ARGS)
	PUBSUB_PURE_PYTHON=1 $(PY) -m pytest tests -q -ra -p no:cacheprovider --ignore=tests/integration $(PYTEST_ARGS)
	$(MAKE) --no-print-directory typecheck

# Strict mypy over every package (pyproject.toml's [tool.mypy]): pubsub_core, state, settings, streaming, producers,
# supervise, cli, benchmarks and tests.
typecheck: setup
	$(PY) -m mypy

# The inner loop: lint, strict mypy, then the tests without Kafka, Spark or a cluster and without the few slow
# ones (marker `slow`), on the protocol's source (PUBSUB_PURE_PYTHON=1): no broker, no Spark session, no compiled
# build to redo after an edit, so tests/native (the builds themselves) is left out too. `make test` runs them all.
check: $(PY_STAMP) $(JAR_STAMP) $(LOCAL_FS_JAR) $(JARS_LINK)
	$(VENV)/bin/ruff check .
	$(PY) -m mypy
	PUBSUB_PURE_PYTHON=1 $(PY) -m pytest tests -q -p no:cacheprovider --ignore=tests/native \
	  -m "not kafka and not spark and not cluster and not slow" $(PYTEST_ARGS)

lint: $(PY_STAMP)
	$(VENV)/bin/ruff check .

broker-stop: | $(PY)
	$(VENV)/bin/pubsub broker stop

clean-runtime:
	rm -rf .runtime
