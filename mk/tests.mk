# SPDX-License-Identifier: Apache-2.0
# The Check test binaries (tests/unit, tests/integration) and test-bins.

# ---- tests (Check) ----
$(B)/tests/unit/%: tests/unit/%.c $(B)/liblw_tools.a $(B)/liblw_core.a | $(B)/.test-libs-ok
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_ALL) $(OPT) -pthread $(CHECK_CFLAGS) $(TOOL_INC) -o $@ $< $(B)/liblw_tools.a $(B)/liblw_core.a \
	    $(SAN_LDFLAGS) $(CHECK_LIBS) $(JSON_LIBS) $(LIB_LIBS)
$(B)/tests/integration/%: tests/integration/%.c $(HARNESS_SRCS) $(wildcard tests/integration/*.h) $(B)/liblw_tools.a $(B)/liblw_core.a | $(B)/.test-libs-ok
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_ALL) $(OPT) -pthread $(CHECK_CFLAGS) $(TOOL_INC) -Itests/integration -o $@ $< $(HARNESS_SRCS) \
	    $(B)/liblw_tools.a $(B)/liblw_core.a $(SAN_LDFLAGS) $(CHECK_LIBS) $(JSON_LIBS) $(LIB_LIBS)

test-bins: all $(STUBS) $(PROGS) $(UNITS) $(INTEGS)

# Python frame probe: loaded with ctypes by tests/python/check_pyframes.py,
# which tests/unit/test_pyframes runs under every CPython >= 3.8 found.
$(B)/tests/python/pyprobe.so: tests/python/pyprobe.c src/track/pyframes.c $(wildcard src/track/*.h src/loader/*.h src/vocab/*.h src/base/*.h) | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_track) $(OPT) -fPIC -shared -pthread -o $@ tests/python/pyprobe.c \
	    src/track/pyframes.c $(SAN_LDFLAGS) -ldl
test-bins: $(B)/tests/python/pyprobe.so
$(B)/tests/python/fake_freethreaded.so: tests/python/fake_freethreaded.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O1 -fPIC -shared -o $@ $<
test-bins: $(B)/tests/python/fake_freethreaded.so
