# SPDX-License-Identifier: Apache-2.0
# Install, the wheel, their end-to-end check, and the release tarball.

# Installs the command, the library, the headers, the CPU stand-ins, the
# Python package, the man page and the bash completion; records the folders
# it had to create so that uninstall leaves PREFIX as it was (scripts/install.sh).
install: all $(STAND_INS) $(DOCS)
	@scripts/install.sh install "$(DESTDIR)" "$(PREFIX)" "$(B)"
uninstall:
	@scripts/install.sh uninstall "$(DESTDIR)" "$(PREFIX)" "$(B)"

# The wheel, from this build folder (the backend runs make all stand-ins docs).
# pip install . builds the same; see pyproject.toml and python/backend.
PYTHON ?= python3
wheel: all $(STAND_INS) $(DOCS)
	@mkdir -p $(B)/dist
	$(Q)LEAKWATCH_BUILD_DIR=$(B) $(PYTHON) python/backend/leakwatch_build.py wheel $(B)/dist

# The install routes end to end: a wheel into a fresh venv, make install and
# uninstall into a temporary prefix, the man page rendered (tests/install).
check-install: all $(STAND_INS) $(DOCS) $(B)/examples/train_loop
	@PYTHON=$(PYTHON) tests/install/check-install.sh $(B)

# ---- release ----
# make dist: build/leakwatch-VERSION.tar.gz, reproducible (scripts/dist.sh).
# make distcheck: unpacks it on its own and runs its whole make check.
# check-dist (in make check): reproducible, the tracked files, and the
# unpacked tree builds and passes its unit tests.
dist:
	@scripts/dist.sh $(B)
distcheck:
	@scripts/check-dist.sh $(B) full
check-dist:
	@scripts/check-dist.sh $(B)
# Every source file carries SPDX-License-Identifier: Apache-2.0.
check-spdx:
	@scripts/check-spdx.sh .
