# SPDX-License-Identifier: Apache-2.0
# The command: build/leakwatch, its archive liblw_tools.a, the HTML
# templates built in, and the man page and completion made from its --help.

# The command links the base and vocab layers only (lw_core is the whole
# library for the tests; the linker takes from it what the command names).
$(B)/obj/tools/%.o: tools/%.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_LIB) $(DEPFLAGS) $(INC_vocab) $(TOOL_INC) -I$(B)/gen -c $< -o $@

# The HTML page's CSS and markup, kept as files in tools/render/templates/ and
# built into the command.
TEMPLATES := $(wildcard tools/render/templates/*)
$(B)/gen/lw_templates.h: $(TEMPLATES) scripts/embed.sh
	@mkdir -p $(@D)
	$(Q)scripts/embed.sh $@ report_css=tools/render/templates/report.css \
	    page_head=tools/render/templates/page_head.html page_foot=tools/render/templates/page_foot.html
$(B)/obj/tools/render/render_html.o: $(B)/gen/lw_templates.h

$(B)/obj/empty.o:
	@mkdir -p $(@D); echo 'typedef int lw_empty_unit;' | $(CC) -x c -c - -o $@

$(B)/liblw_tools.a: $(TOOL_OBJS) $(B)/obj/empty.o
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^

$(LIB_OBJS) $(TOOL_OBJS): $(VERSION_H)

$(B)/leakwatch: tools/main.c $(B)/liblw_tools.a $(B)/liblw_core.a $(VERSION_H)
	$(Q)$(CC) $(CFLAGS_LIB) $(INC_vocab) $(TOOL_INC) -o $@ $< $(B)/liblw_tools.a $(B)/liblw_core.a $(SAN_LDFLAGS) $(JSON_LIBS) $(LIB_LIBS) \
	    -Wl,-rpath,'$$ORIGIN'
	@echo "make: built $@"

# The man page and the bash completion, generated from the command's own
# --help texts (and its table of LEAKWATCH_* variables), so they cannot drift.
DOCS := $(B)/doc/leakwatch.1 $(B)/doc/leakwatch.bash
docs: $(DOCS)
$(B)/doc/leakwatch.1: $(B)/leakwatch scripts/gen-docs.sh VERSION
	@mkdir -p $(@D)
	$(Q)scripts/gen-docs.sh man $(B)/leakwatch >$@.tmp && mv $@.tmp $@
$(B)/doc/leakwatch.bash: $(B)/leakwatch scripts/gen-docs.sh
	@mkdir -p $(@D)
	$(Q)scripts/gen-docs.sh bash $(B)/leakwatch >$@.tmp && mv $@.tmp $@
