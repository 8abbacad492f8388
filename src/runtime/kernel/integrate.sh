#!/bin/sh
# Adds the kprewrite kernel runtime to a Linux 6.1 source tree (doc/kernel.md):
#   kernel/kprewrite/      the runtime, the pool, Kconfig, Makefile, and the
#                          runtime core shared with the user runtime (core-*.c)
#   include/linux/kprewrite.h  the handler API for modules
#   include/linux/sched.h  task_struct.kprw_kret_instances: the calls a task's
#                          return probes follow (kernel/fork.c clears it in a
#                          new task, kernel/exit.c gives them back when the
#                          task is freed)
#   arch/x86/include/asm/unwind.h  the unwinders take the real return address
#                          where they meet the return trampoline's
#   include/linux/kprobes.h, arch/Kconfig, lib/Kconfig.debug  without
#                          CONFIG_KPROBES, the kprobes API is kprewrite's
#                          (CONFIG_KPREWRITE_KPROBES_API, with CONFIG_KRETPROBES
#                          and the kprobes KUnit suite available)
#   kernel/trace/Kconfig, kernel/trace/trace_probe.h, kernel/trace/trace_kprobe.c
#                          and kprobe_events (CONFIG_KPROBE_EVENTS) on it, and
#                          with it BPF kprobe programs (kprobe_running() for
#                          bpf_get_func_ip() is kprewrite's); a
#                          point that was not baked gets its own line in
#                          tracefs' error_log, saying how to bake it
#   arch/x86/kernel/vmlinux.lds.S  symbols around .head.text (boot code)
#   include/asm-generic/kprobes.h, include/asm-generic/vmlinux.lds.h
#                          NOKPROBE_SYMBOL() and __kprobes keep the kernel's
#                          kprobe blacklist without CONFIG_KPROBES too
#   arch/x86/kernel/traps.c  do_int3() calls kprewrite_int3_handler() first
#   arch/x86/mm/fault.c    a page fault asks kprewrite_fault_handler() where it
#                          asks kprobes (a kprobe's fault_handler); struct
#                          kprobe gets its fault_handler field back
#   arch/x86/Kconfig       sources kernel/kprewrite/Kconfig (CONFIG_KPREWRITE)
#   kernel/Makefile        builds kernel/kprewrite/
#   scripts/Makefile.vmlinux  after the final link, before the arch's post-link
#                          step: kprewrite --kernel --probe-file $(KPREWRITE_PROBES)
#                          vmlinux, when KPREWRITE_PROBES is set (make KPREWRITE_PROBES=FILE)
#   scripts/Makefile.modfinal  the same into each external module after its
#                          link (make M=DIR KPREWRITE_PROBES=FILE)
#   include/linux/module.h, kernel/module/main.c  struct module's kprw_table:
#                          the probe table kprewrite baked into a module
#                          (section .kprewrite.table), which the runtime
#                          registers while the module comes
# Run it again to update the copied files; the edits are made once.
# usage: integrate.sh LINUX_SOURCE_DIR
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
src=${1:?usage: integrate.sh LINUX_SOURCE_DIR}
[ -f "$src/scripts/Makefile.vmlinux" ] && [ -f "$src/arch/x86/Kconfig" ] ||
    { echo "integrate.sh: $src is not a Linux source tree with scripts/Makefile.vmlinux (6.1 or later)" >&2; exit 1; }

# put FROM TO: copy only what changed (a file's time decides what the
# kernel rebuilds: include/linux/kprewrite.h reaches the unwinders' header)
put() { cmp -s "$1" "$2" || cp "$1" "$2"; }
mkdir -p "$src/kernel/kprewrite"
# (one line: t/deb/check-deb.sh reads the list from it)
for f in startup.c dispatch.c patch.c api.c debugfs.c module.c post.c kretprobe.c jprobe.c fault.c internal.h arch.h arch-x86.h arch-x86.c trampoline-x86.S selftest.c selftest-kret.c selftest-api.c selftest-legacy.c pool.S Makefile Kconfig; do
    put "$here/$f" "$src/kernel/kprewrite/$f"
done
# an earlier layout's files (one kprewrite.c, trampoline.S): no longer built
rm -f "$src/kernel/kprewrite/kprewrite.c" "$src/kernel/kprewrite/trampoline.S"
put "$top/include/kprewrite/abi.h" "$src/kernel/kprewrite/abi.h"
# the runtime core shared with the user runtime
put "$top/src/runtime/core/kprw-core.h" "$src/kernel/kprewrite/kprw-core.h"
for f in control table wanted; do put "$top/src/runtime/core/$f.c" "$src/kernel/kprewrite/core-$f.c"; done
put "$top/src/arch/x86/site.h" "$src/kernel/kprewrite/site.h"   # what a site holds in each state
put "$here/kprewrite.h" "$src/include/linux/kprewrite.h"

grep -q 'kernel/kprewrite/Kconfig' "$src/arch/x86/Kconfig" ||
    printf '\nsource "kernel/kprewrite/Kconfig"\n' >> "$src/arch/x86/Kconfig"
grep -q 'CONFIG_KPREWRITE' "$src/kernel/Makefile" ||
    printf '\nobj-$(CONFIG_KPREWRITE) += kprewrite/\n' >> "$src/kernel/Makefile"

# edit FILE ANCHOR-REGEX TEXT: TEXT (three lines: #ifdef, the line, #endif)
# goes in before the first line matching ANCHOR-REGEX, once
edit() {
    grep -qF "$(printf '%s\n' "$3" | sed -n 2p)" "$1" && return 0
    awk -v text="$3" -v re="$2" '!done && $0 ~ re { print text; done = 1 } { print }
        END { if (!done) exit 1 }' "$1" > "$1.kprw" ||
        { rm -f "$1.kprw"; echo "integrate.sh: no line matching '$2' in $1" >&2; exit 1; }
    mv "$1.kprw" "$1"
}
# include_kprewrite FILE HEADER: FILE includes <linux/kprewrite.h> right
# after its <linux/HEADER.h>, once
include_kprewrite() {
    grep -q 'linux/kprewrite.h' "$1" ||
        sed -i "0,/^#include <linux\/$2.h>/s//#include <linux\/$2.h>\n#include <linux\/kprewrite.h>/" "$1"
    grep -q 'linux/kprewrite.h' "$1" ||
        { echo "integrate.sh: could not include linux/kprewrite.h in $1" >&2; exit 1; }
}
# (a tree an earlier integrate.sh edited had the field typed; files are
# rewritten only when they change: their times decide what the kernel rebuilds)
! grep -q 'struct kprw_kretprobe_instance.*\*kprw_kret_instances;' "$src/include/linux/sched.h" ||
    sed -i 's/^\tstruct kprw_kretprobe_instance\t\*kprw_kret_instances;$/\tvoid\t\t\t\t*kprw_kret_instances;/' "$src/include/linux/sched.h"
edit "$src/include/linux/sched.h" '^#ifdef CONFIG_KRETPROBES$' \
    "#ifdef CONFIG_KPREWRITE
	void				*kprw_kret_instances;
#endif"
edit "$src/kernel/fork.c" '^#ifdef CONFIG_KRETPROBES$' \
    "#ifdef CONFIG_KPREWRITE
	p->kprw_kret_instances = NULL;
#endif"
edit "$src/kernel/exit.c" '^[[:space:]]*kprobe_flush_task[(]tsk[)];' \
    "#ifdef CONFIG_KPREWRITE
	kprewrite_flush_task(tsk);
#endif"
# a module's probe table (src/rewriter/kmodule.c writes it into section
# .kprewrite.table, abi.h's KPRW_SEC_TABLE): found by the loader as it finds
# the kprobes blacklist, registered by the runtime when the module comes
edit "$src/include/linux/module.h" '^#ifdef CONFIG_KPROBES$' \
    "#ifdef CONFIG_KPREWRITE
	const void *kprw_table;		/* probes kprewrite baked into the module */
	unsigned int kprw_table_size;
#endif"
edit "$src/kernel/module/main.c" '^#ifdef CONFIG_KPROBES$' \
    "#ifdef CONFIG_KPREWRITE
	mod->kprw_table = section_objs(info, \".kprewrite.table\", 1, &mod->kprw_table_size);
#endif"
# the int3 trap calls the runtime first, before kprobes' handler and the die
# notifiers (functions '*' probes: an int3 point in one would trap again)
tr=$src/arch/x86/kernel/traps.c
grep -q 'kprewrite_int3_handler' "$tr" || {
    awk '/^#ifdef CONFIG_KPROBES$/ { held = $0; next }
         held != "" { if ($0 ~ /^\tif \(kprobe_int3_handler\(regs\)\)$/ && !done) {
                          print "#ifdef CONFIG_KPREWRITE"; print "\tif (kprewrite_int3_handler(regs))"
                          print "\t\treturn true;"; print "#endif"; done = 1 }
                      print held; held = "" }
         { print }' "$tr" > "$tr.kprw" && mv "$tr.kprw" "$tr"; }
grep -q 'kprewrite_int3_handler' "$tr" ||
    { echo "integrate.sh: could not find kprobe_int3_handler's call in $tr" >&2; exit 1; }
include_kprewrite "$tr" kprobes
# a fault in a kprobe's handler goes to its fault_handler (fault.c): the page
# fault handler asks the runtime where it asks kprobes, before the
# exception-table fixups (the other traps come through the die notifiers)
fa=$src/arch/x86/mm/fault.c
grep -q 'kprewrite_fault_handler' "$fa" || {
    awk '{ print }
         /kprobe_page_fault[(]regs, X86_TRAP_PF[)]/ { after = 1; next }
         after && /^[[:space:]]*return;$/ { print "#ifdef CONFIG_KPREWRITE"; print "\tif (kprewrite_fault_handler(regs, X86_TRAP_PF))"
                                            print "\t\treturn;"; print "#endif"; n++ }
         { after = 0 }
         END { if (n != 2) exit 1 }' "$fa" > "$fa.kprw" && mv "$fa.kprw" "$fa"; } ||
    { rm -f "$fa.kprw"; echo "integrate.sh: could not find kprobe_page_fault()'s two calls in $fa" >&2; exit 1; }
include_kprewrite "$fa" kprobes
# the unwinders recover a return address the trampoline took over
edit "$src/arch/x86/include/asm/unwind.h" '^[[:space:]]*return addr;$' \
    "#ifdef CONFIG_KPREWRITE
	if (addr == (unsigned long)kprewrite_kret_trampoline) addr = kprewrite_unwind_ret_addr(state->task, addr_p);
#endif"
include_kprewrite "$src/arch/x86/include/asm/unwind.h" rethook
include_kprewrite "$src/kernel/exit.c" kprobes

# Without CONFIG_KPROBES, kprewrite provides <linux/kprobes.h>'s API
# (CONFIG_KPREWRITE_KPROBES_API): the header's stubs step aside (renamed
# by macros, then declared for real), CONFIG_KRETPROBES follows
# CONFIG_KPREWRITE too, and the kernel's kprobes KUnit suite may be built
kp=$src/include/linux/kprobes.h
if ! grep -q KPREWRITE "$kp"; then
    stubs="register_kprobe register_kprobes unregister_kprobe unregister_kprobes register_kretprobe
           register_kretprobes unregister_kretprobe unregister_kretprobes disable_kprobe enable_kprobe"
    awk -v stubs="$stubs" '
    BEGIN { n = split(stubs, f, /[ \n]+/) }
    !a && /^#else \/\* !CONFIG_KPROBES: \*\/$/ {
        print; a = 1
        print "#ifdef CONFIG_KPREWRITE_KPROBES_API"
        print "/* kprewrite provides these (kernel/kprewrite/): the stubs step aside */"
        for (i = 1; i <= n; i++) if (f[i] != "") printf "#define %s kprobes_stub_%s\n", f[i], f[i]
        print "#endif"
        next
    }
    a && !b && /^#endif \/\* CONFIG_KPROBES \*\/$/ {
        print; b = 1
        print "#ifdef CONFIG_KPREWRITE_KPROBES_API"
        for (i = 1; i <= n; i++) if (f[i] != "") printf "#undef %s\n", f[i]
        print "int register_kprobe(struct kprobe *p);"
        print "void unregister_kprobe(struct kprobe *p);"
        print "int register_kprobes(struct kprobe **kps, int num);"
        print "void unregister_kprobes(struct kprobe **kps, int num);"
        print "int register_kretprobe(struct kretprobe *rp);"
        print "void unregister_kretprobe(struct kretprobe *rp);"
        print "int register_kretprobes(struct kretprobe **rps, int num);"
        print "void unregister_kretprobes(struct kretprobe **rps, int num);"
        print "int disable_kprobe(struct kprobe *kp);"
        print "int enable_kprobe(struct kprobe *kp);"
        print "struct kretprobe *get_kretprobe(struct kretprobe_instance *ri);"
        print "#endif"
        next
    }
    { print }
    END { if (!b) exit 1 }' "$kp" > "$kp.kprw" ||
        { rm -f "$kp.kprw"; echo "integrate.sh: could not find the !CONFIG_KPROBES stubs in $kp" >&2; exit 1; }
    mv "$kp.kprw" "$kp"
fi
# struct kprobe gets the fault_handler the kernel dropped in 5.14, which
# kprewrite's runtime calls (fault.c), so that code written for it builds
edit "$kp" '^[[:space:]]*/[*] Saved opcode [(]which has been replaced with breakpoint[)] [*]/$' \
    "#ifdef CONFIG_KPREWRITE_KPROBES_API
	int (*fault_handler)(struct kprobe *p, struct pt_regs *regs, int trapnr);	/* kprewrite: a handler faulted */
#endif"
grep -q 'KPREWRITE_KPROBES_API' "$src/arch/Kconfig" ||
    sed -i 's/^\tdepends on KPROBES && (HAVE_KRETPROBES || HAVE_RETHOOK)$/\tdepends on (KPROBES || KPREWRITE_KPROBES_API) \&\& (HAVE_KRETPROBES || HAVE_RETHOOK)/' "$src/arch/Kconfig"
grep -q 'depends on (KPROBES || KPREWRITE_KPROBES_API) && (HAVE_KRETPROBES' "$src/arch/Kconfig" ||
    { echo "integrate.sh: could not find config KRETPROBES's dependency in $src/arch/Kconfig" >&2; exit 1; }
grep -q 'KPREWRITE_KPROBES_API' "$src/lib/Kconfig.debug" || {
awk '/^config KPROBES_SANITY_TEST$/ { t = 1 } t && /^\tdepends on KPROBES$/ { print "\tdepends on KPROBES || KPREWRITE_KPROBES_API"; t = 0; next }
     /^config / && !/KPROBES_SANITY_TEST/ { t = 0 } { print }' "$src/lib/Kconfig.debug" > "$src/lib/Kconfig.debug.kprw" &&
    mv "$src/lib/Kconfig.debug.kprw" "$src/lib/Kconfig.debug"; }
grep -q 'depends on KPROBES || KPREWRITE_KPROBES_API' "$src/lib/Kconfig.debug" ||
    { echo "integrate.sh: could not find config KPROBES_SANITY_TEST in $src/lib/Kconfig.debug" >&2; exit 1; }

# kprobe_events (kernel/trace/trace_kprobe.c) on the kprobes API kprewrite
# provides: it also asks kprobe_on_func_entry() and kprobe_lookup_name()
# (kernel/kprobes.c's, api.c's here), get_kretprobe_retaddr() and, in its
# start-up self-test, wait_for_kprobe_optimizer() (nothing to wait for)
edit "$kp" '^static inline int disable_kretprobe[(]struct kretprobe [*]rp[)]$' \
    "#ifdef CONFIG_KPREWRITE_KPROBES_API
int kprobe_on_func_entry(kprobe_opcode_t *addr, const char *sym, unsigned long offset);	/* kprewrite: for kprobe_events */
kprobe_opcode_t *kprobe_lookup_name(const char *name, unsigned int offset);
static nokprobe_inline unsigned long get_kretprobe_retaddr(struct kretprobe_instance *ri) { return ri->node.ret_addr; }
static inline void wait_for_kprobe_optimizer(void) { }
#endif"
# and kprobe_running(), which a BPF kprobe program's bpf_get_func_ip()
# asks (kernel/trace/bpf_trace.c): the kprobe whose handler runs (api.c);
# the stub returning NULL steps aside
edit "$kp" '^static inline struct kprobe [*]get_kprobe[(]void [*]addr[)]$' \
    "#ifdef CONFIG_KPREWRITE_KPROBES_API
#define kprobe_running kprobes_stub_kprobe_running	/* kprewrite: api.c's */
#endif"
edit "$kp" '^static inline int disable_kretprobe[(]struct kretprobe [*]rp[)]$' \
    "#ifdef CONFIG_KPREWRITE_KPROBES_API
#undef kprobe_running	/* kprewrite: the kprobe whose handler runs, for bpf_get_func_ip() */
struct kprobe *kprobe_running(void);
#endif"
tk=$src/kernel/trace/Kconfig
grep -q 'KPREWRITE_KPROBES_API' "$tk" || {
awk '/^config KPROBE_EVENTS$/ { t = 1 } t && /^\tdepends on KPROBES$/ { print "\tdepends on KPROBES || KPREWRITE_KPROBES_API"; t = 0; next }
     /^config / && !/^config KPROBE_EVENTS$/ { t = 0 } { print }' "$tk" > "$tk.kprw" && mv "$tk.kprw" "$tk"; }
grep -q 'depends on KPROBES || KPREWRITE_KPROBES_API' "$tk" ||
    { echo "integrate.sh: could not find config KPROBE_EVENTS in $tk" >&2; exit 1; }
# (the error messages are one macro's lines: no #ifdef among them)
tp=$src/kernel/trace/trace_probe.h
grep -q 'NOT_BAKED' "$tp" ||
    sed -i 's/^\tC(FAIL_REG_PROBE,\t"Failed to register probe event"),\\$/&\n\tC(NOT_BAKED,\t\t"Not baked into this kernel: bake it (kprewrite --kernel --probe SYM vmlinux; SYM%return for r:)"),\\/' "$tp"
grep -q 'C(NOT_BAKED,' "$tp" ||
    { echo "integrate.sh: could not find FAIL_REG_PROBE's message in $tp" >&2; exit 1; }
# kprewrite's register_kprobe() answers -ENOENT both where no symbol is (no
# address: kp.addr stays unset, or a number no symbol covers) and where the
# address was not baked (kp.addr set, a function's)
edit "$src/kernel/trace/trace_kprobe.c" '^[[:space:]]*else if [(]ret == -ENOENT[)]$' \
    "#ifdef CONFIG_KPREWRITE_KPROBES_API
		else if (ret == -ENOENT && tk->rp.kp.addr && kallsyms_lookup_size_offset((unsigned long)tk->rp.kp.addr, NULL, NULL))
			trace_probe_log_err(0, NOT_BAKED);	/* kprewrite: a point not baked */
#endif"

# perf's kprobe PMU (a BPF kprobe program's perf_event_open()) registers a
# local event, with no error_log: a point not baked says so in the kernel's
# log (perf_event_open() fails with ENOENT)
grep -q 'kprewrite: %pS is not baked' "$src/kernel/trace/trace_kprobe.c" || {
    awk '/^create_local_trace_kprobe[(]char [*]func/ { t = 1 } { print }
         t && /^\tret = __register_trace_kprobe[(]tk[)];$/ { t = 0; n++
             print "#ifdef CONFIG_KPREWRITE_KPROBES_API"
             print "\tif (ret == -ENOENT && tk->rp.kp.addr && kallsyms_lookup_size_offset((unsigned long)tk->rp.kp.addr, NULL, NULL))"
             print "\t\tpr_notice_ratelimited(\"kprewrite: %pS is not baked into this kernel: bake it (kprewrite --kernel --probe SYM vmlinux; SYM%%return for a return probe)\\n\", tk->rp.kp.addr);"
             print "#endif" }
         END { if (n != 1) exit 1 }' "$src/kernel/trace/trace_kprobe.c" > "$src/kernel/trace/trace_kprobe.c.kprw" &&
        mv "$src/kernel/trace/trace_kprobe.c.kprw" "$src/kernel/trace/trace_kprobe.c"; } ||
    { rm -f "$src/kernel/trace/trace_kprobe.c.kprw"; echo "integrate.sh: could not find create_local_trace_kprobe()'s registration in $src/kernel/trace/trace_kprobe.c" >&2; exit 1; }

# NOKPROBE_SYMBOL() and __kprobes mark the code the kernel's kprobes must
# not probe (the int3 and debug traps' paths, the notifier chains, ...);
# without CONFIG_KPROBES they expand to nothing and the kernel loses that
# list. With CONFIG_KPREWRITE they keep it (_kprobe_blacklist,
# .kprobes.text), and kprewrite refuses what is on it, as the kernel's
# kprobes would: a kernel with every function entry probed needs it
ag=$src/include/asm-generic/kprobes.h
grep -q 'CONFIG_KPREWRITE' "$ag" ||
    sed -i '0,/^#ifdef CONFIG_KPROBES$/s//#if defined(CONFIG_KPROBES) || defined(CONFIG_KPREWRITE)/' "$ag"
grep -q '^#if defined(CONFIG_KPROBES) || defined(CONFIG_KPREWRITE)$' "$ag" ||
    { echo "integrate.sh: could not find the NOKPROBE_SYMBOL definitions in $ag" >&2; exit 1; }
lds=$src/include/asm-generic/vmlinux.lds.h
grep -q 'CONFIG_KPREWRITE' "$lds" || {
    awk '/^#ifdef CONFIG_KPROBES$/ { held = $0; next }
         held != "" { if ($0 ~ /^#define KPROBE_BLACKLIST\(\)/) print "#if defined(CONFIG_KPROBES) || defined(CONFIG_KPREWRITE)"; else print held; held = "" }
         { print }' "$lds" > "$lds.kprw" && mv "$lds.kprw" "$lds"; }
grep -q '^#if defined(CONFIG_KPROBES) || defined(CONFIG_KPREWRITE)$' "$lds" ||
    { echo "integrate.sh: could not find KPROBE_BLACKLIST() in $lds" >&2; exit 1; }

# the boot code at the start of .text (.head.text: 32-bit PVH entry,
# identity-mapped setup) gets bounding symbols, so that kprewrite refuses it
xl=$src/arch/x86/kernel/vmlinux.lds.S
grep -q '__kprewrite_head_text_start' "$xl" ||
    sed -i 's/^\([[:space:]]*\)HEAD_TEXT$/\1__kprewrite_head_text_start = .;\n\1HEAD_TEXT\n\1__kprewrite_head_text_end = .;/' "$xl"
grep -q '__kprewrite_head_text_end = \.;' "$xl" ||
    { echo "integrate.sh: could not find HEAD_TEXT in $xl" >&2; exit 1; }

mv=$src/scripts/Makefile.vmlinux
if ! grep -q KPREWRITE "$mv"; then
    # The step is part of the link command, so a changed KPREWRITE_PROBES
    # relinks; the list itself is a prerequisite, so editing it does too.
    awk '
    /^cmd_link_vmlinux =/ { inlink = 1 }
    inlink && /\$\(if \$\(ARCH_POSTLINK\)/ {
        # exit 2 (some probes fall back to int3) is a success; 3 (refused) is not
        print "\t$(if $(KPREWRITE_PROBES), $(KPREWRITE) --kernel --probe-file $(KPREWRITE_PROBES) $@ || [ $$? = 2 ];) \\"
        inlink = 0
    }
    { print }
    /^vmlinux: scripts\/link-vmlinux.sh/ { rule = 1; next }
    rule {
        print "# kprewrite: bake the probes listed in KPREWRITE_PROBES (an absolute path) after the final link"
        print "KPREWRITE ?= kprewrite"
        print "vmlinux: $(KPREWRITE_PROBES)"
        rule = 0
    }' "$mv" > "$mv.kprw" && mv "$mv.kprw" "$mv"
    grep -q 'probe-file $(KPREWRITE_PROBES)' "$mv" ||
        { echo "integrate.sh: could not find the final link command in $mv" >&2; exit 1; }
fi
mf=$src/scripts/Makefile.modfinal
if ! grep -q KPREWRITE "$mf"; then
    # External modules (make M=DIR KPREWRITE_PROBES=FILE): the probes are
    # baked into each module as part of its link command (so only when it
    # is relinked, and a changed list relinks), as into vmlinux. 6.1 has an
    # ARCH_POSTLINK line after the ld line, 6.12 ends with the ld line; the
    # rule is "$(modules): %.ko: ..." (.ko names) on 6.1, "%.ko: ..." on 6.12.
    awk '
    /^      cmd_ld_ko_o \+?=/ { inlink = 1 }
    inlink && /-o \$@ \$\(filter %\.o, \$\^\)/ {
        step = "\t$(if $(and $(KBUILD_EXTMOD),$(KPREWRITE_PROBES)), $(KPREWRITE) --kernel --probe-file $(KPREWRITE_PROBES) $@ || [ $$? = 2 ];)"
        if ($0 ~ /\\$/) { print; print step " \\" }
        else { print $0 "; \\"; sub(/;\)$/, ", true)", step); print step }   # a whole command, as the last one
        inlink = 0
        next
    }
    /^ARCH_MODULE_LDS :=/ {
        print
        print "# kprewrite: bake the probes listed in KPREWRITE_PROBES (an absolute path) into external modules"
        print "KPREWRITE ?= kprewrite"
        next
    }
    /^\$\(modules\): %\.ko:/ { print "$(modules): $(if $(KBUILD_EXTMOD),$(KPREWRITE_PROBES))" }
    /^%\.ko: %\.o / { print "$(modules:%.o=%.ko): $(if $(KBUILD_EXTMOD),$(KPREWRITE_PROBES))" }
    { print }
    ' "$mf" > "$mf.kprw" && mv "$mf.kprw" "$mf"
    grep -q 'probe-file $(KPREWRITE_PROBES) $@' "$mf" && grep -q '^$(modules.*: $(if $(KBUILD_EXTMOD),$(KPREWRITE_PROBES))' "$mf" ||
        { echo "integrate.sh: could not find the module link command in $mf" >&2; exit 1; }
fi
echo "integrate.sh: kprewrite added to $src; enable CONFIG_KPREWRITE and build with make KPREWRITE_PROBES=FILE"
