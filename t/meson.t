#!/bin/sh
# The pkg-config file from Meson, as a project that uses it would:
# kprewrite installed into a stage, examples/meson set up with
# dependency('kprewrite-rt'), built (a custom_target bakes the probes into a
# copy of the linked program), run. Skipped where meson is not installed
# (scripts/install-deps.sh installs it).
. "$KP_SRCDIR/t/lib.sh"
need meson ninja pkg-config cc
D=$(tmpdir meson)
make -s -C "$KP_BUILDDIR" install prefix="$D/stage" >"$D/install.log" 2>&1
ok $? "make install into a stage ($(tail -n 1 "$D/install.log"))"
# the staged .pc says the configured prefix: a pkg-config that points it
# at the stage (PKG_CONFIG is the program Meson runs)
printf '#!/bin/sh\nexec pkg-config --define-variable=prefix=%s "$@"\n' "$D/stage" > "$D/pkg-config"
chmod +x "$D/pkg-config"
# (LIBDIR: lib, or lib/x86_64-linux-gnu in a Debian package's build)
pc=$(find "$D/stage" -name kprewrite-rt.pc | head -n 1)
libdir=$(dirname "$(find "$D/stage" -name 'libkprewrite-rt.so.0' | head -n 1)")
export PKG_CONFIG="$D/pkg-config" PKG_CONFIG_PATH="${pc%/*}" PATH="$D/stage/bin:$PATH"
mkdir -p "$D/src/meson"
cp "$KP_SRCDIR/examples/wordfreq.c" "$KP_SRCDIR/examples/handlers.c" "$D/src/"
cp "$KP_SRCDIR/examples/meson/meson.build" "$D/src/meson/"
meson setup "$D/b" "$D/src/meson" >"$D/setup.log" 2>&1
ok $? "meson setup: dependency('kprewrite-rt') found ($(grep -m 1 -iE 'error|not found' "$D/setup.log"))"
like "Run-time dependency kprewrite-rt found: YES" "$(cat "$D/setup.log")" "through pkg-config"
ninja -C "$D/b" >"$D/build.log" 2>&1
ok $? "ninja builds it ($(grep -m 1 -iE 'error|failed' "$D/build.log"))"
like "probes baked" "$(cat "$D/build.log")" "the custom_target baked the probes"
text=$example_text
example_ran "$(LD_LIBRARY_PATH="$libdir" "$D/b/wordfreq" "$text" 2>&1)" "Meson (handlers linked whole)"
like "; 1 event definition stored" "$(cat "$D/build.log")" "the event definition among the probes was stored"
LD_LIBRARY_PATH="$libdir" KPREWRITE_TRACE="$D/trace.txt" "$D/b/wordfreq" "$text" >/dev/null 2>&1
is "16|the quick brown" "$(grep -c ': wh: (word_hash+0x0) s="' "$D/trace.txt")|$(sed -n 's/.*: wh: (word_hash+0x0) s="\(.*\)"$/\1/p' "$D/trace.txt" | head -n 3 | tr '\n' ' ' | sed 's/ $//')" \
    "its event records each of the 16 words, KPREWRITE_TRACE alone"
like "count_word +not baked" "$(LD_LIBRARY_PATH="$libdir" "$D/b/wordfreq-linked" "$text" 2>&1)" \
    "the linked program, before the bake, has no probe"
done_testing
