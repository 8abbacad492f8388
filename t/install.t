#!/bin/sh
# make install, as a user would find it: the program, the runtime, the
# headers, the pkg-config file, the CMake package, the bash completion, and
# the man pages man finds (kprewrite(1), kprewrite-rt(3)); make uninstall
# takes it all away again.
. "$KP_SRCDIR/t/lib.sh"
need man
D=$(tmpdir install)
make -s -C "$KP_BUILDDIR" install prefix="$D/stage" >"$D/install.log" 2>&1
ok $? "make install prefix=STAGE ($(tail -n 1 "$D/install.log"))"
for f in bin/kprewrite include/kprewrite/kprobes.h share/bash-completion/completions/kprewrite; do
    ok $([ -e "$D/stage/$f" ]; echo $?) "installed: $f"
done
for f in libkprewrite-rt.so.0 libkprewrite-pool.a kprewrite-rt.pc kprewriteConfig.cmake; do
    ok $([ -n "$(find "$D/stage" -name "$f")" ]; echo $?) "installed: $f"
done
like "/share/man/man3/kprewrite-rt\\.3" "$(MANPATH="$D/stage/share/man" man -w kprewrite-rt 2>&1)" "man kprewrite-rt finds the page"
like "/share/man/man1/kprewrite\\.1" "$(MANPATH="$D/stage/share/man" man -w kprewrite 2>&1)" "man kprewrite finds the page"
like "register_kprobe" "$(MANPATH="$D/stage/share/man" MANWIDTH=80 man kprewrite-rt 2>/dev/null | col -b)" \
    "and shows it"
make -s -C "$KP_BUILDDIR" uninstall prefix="$D/stage" >"$D/uninstall.log" 2>&1
ok $? "make uninstall"
is "" "$(find "$D/stage" -type f | head -n 5)" "no installed file is left"
done_testing
