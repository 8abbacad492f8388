#!/bin/sh
# Adds the kprewrite kernel runtime to a Linux 6.1 source tree (doc/kernel.md):
#   kernel/kprewrite/      the runtime, the pool, Kconfig, Makefile, and the
#                          runtime core shared with the user runtime (core-*.c)
#   include/linux/kprewrite.h  the handler API for modules
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
cp "$here/kprewrite.c" "$here/selftest.c" "$here/pool.S" "$here/Makefile" "$here/Kconfig" "$src/kernel/kprewrite/"
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
