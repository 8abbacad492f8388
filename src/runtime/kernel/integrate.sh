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
#   arch/x86/Kconfig       sources kernel/kprewrite/Kconfig (CONFIG_KPREWRITE)
#   kernel/Makefile        builds kernel/kprewrite/
#   scripts/Makefile.vmlinux  after the final link, before the arch's post-link
#                          step: kprewrite --kernel --probe-file $(KPREWRITE_PROBES)
#                          vmlinux, when KPREWRITE_PROBES is set (make KPREWRITE_PROBES=FILE)
# Run it again to update the copied files; the edits are made once.
# usage: integrate.sh LINUX_SOURCE_DIR
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
src=${1:?usage: integrate.sh LINUX_SOURCE_DIR}
[ -f "$src/scripts/Makefile.vmlinux" ] && [ -f "$src/arch/x86/Kconfig" ] ||
    { echo "integrate.sh: $src is not a Linux source tree with scripts/Makefile.vmlinux (6.1 or later)" >&2; exit 1; }

mkdir -p "$src/kernel/kprewrite"
cp "$here/kprewrite.c" "$here/post.c" "$here/kretprobe.c" "$here/internal.h" "$here/trampoline.S" "$here/selftest.c" "$here/selftest-kret.c" \
   "$here/pool.S" "$here/Makefile" "$here/Kconfig" "$src/kernel/kprewrite/"
cp "$top/include/kprewrite/abi.h" "$src/kernel/kprewrite/abi.h"
# the runtime core shared with the user runtime
cp "$top/src/runtime/core/kprw-core.h" "$src/kernel/kprewrite/"
for f in control table wanted; do cp "$top/src/runtime/core/$f.c" "$src/kernel/kprewrite/core-$f.c"; done
cp "$top/src/arch/x86/site.h" "$src/kernel/kprewrite/"   # what a site holds in each state
cp "$here/kprewrite.h" "$src/include/linux/kprewrite.h"

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
edit "$src/include/linux/sched.h" '^#ifdef CONFIG_KRETPROBES$' \
    "#ifdef CONFIG_KPREWRITE
	struct kprw_kretprobe_instance	*kprw_kret_instances;
#endif"
edit "$src/kernel/fork.c" '^#ifdef CONFIG_KRETPROBES$' \
    "#ifdef CONFIG_KPREWRITE
	p->kprw_kret_instances = NULL;
#endif"
edit "$src/kernel/exit.c" '^[[:space:]]*kprobe_flush_task[(]tsk[)];' \
    "#ifdef CONFIG_KPREWRITE
	kprewrite_flush_task(tsk);
#endif"
# the unwinders recover a return address the trampoline took over
edit "$src/arch/x86/include/asm/unwind.h" '^[[:space:]]*return addr;$' \
    "#ifdef CONFIG_KPREWRITE
	if (addr == (unsigned long)kprewrite_kret_trampoline) addr = kprewrite_unwind_ret_addr(state->task, addr_p);
#endif"
grep -q 'linux/kprewrite.h' "$src/arch/x86/include/asm/unwind.h" ||
    sed -i '0,/^#include <linux\/rethook.h>/s//#include <linux\/rethook.h>\n#include <linux\/kprewrite.h>/' \
        "$src/arch/x86/include/asm/unwind.h"
grep -q 'linux/kprewrite.h' "$src/arch/x86/include/asm/unwind.h" ||
    { echo "integrate.sh: could not include linux/kprewrite.h in $src/arch/x86/include/asm/unwind.h" >&2; exit 1; }
grep -q 'linux/kprewrite.h' "$src/kernel/exit.c" ||
    sed -i '0,/^#include <linux\/kprobes.h>/s//#include <linux\/kprobes.h>\n#include <linux\/kprewrite.h>/' "$src/kernel/exit.c"
grep -q 'linux/kprewrite.h' "$src/kernel/exit.c" ||
    { echo "integrate.sh: could not include linux/kprewrite.h in $src/kernel/exit.c" >&2; exit 1; }

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
echo "integrate.sh: kprewrite added to $src; enable CONFIG_KPREWRITE and build with make KPREWRITE_PROBES=FILE"
