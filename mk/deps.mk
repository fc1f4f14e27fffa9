# SPDX-License-Identifier: Apache-2.0
# Build and test dependencies (scripts/install-deps.sh).

# Build dependencies: apt-get runs only for make deps, demo and check (root or
# sudo; else one message). Any other goal only checks: when something is
# missing it stops with one line naming it and saying to run make deps.
# The tests' tools (clang's libFuzzer, valgrind, cppcheck, ...) only for make check.
DEPS_MODE := $(if $(filter deps demo check,$(MAKECMDGOALS)),build,check)
deps: $(B)/.deps-ok
$(B)/.deps-ok: scripts/install-deps.sh
	@scripts/install-deps.sh $(DEPS_MODE)
	@mkdir -p $(B) && touch $@
test-deps: $(B)/.test-deps-ok
$(B)/.test-deps-ok: scripts/install-deps.sh | $(B)/.deps-ok
	@scripts/install-deps.sh test
	@mkdir -p $(B) && touch $@
# Check and libunwind, for the test programs and make bench only (a plain
# build needs neither): checked, with one line naming what is missing (under
# make check, installed first by test-deps).
$(B)/.test-libs-ok: scripts/install-deps.sh | $(B)/.deps-ok $(if $(filter build,$(DEPS_MODE)),$(B)/.test-deps-ok)
	@scripts/install-deps.sh check-test
	@mkdir -p $(B) && touch $@
