#!/bin/sh
# The CMake package, as a project that uses it would: kprewrite installed
# (make install into a stage), examples/cmake configured with
# find_package(kprewrite CONFIG), built (linked with kprewrite::rt, probes
# baked after the link by kprewrite_bake()), run; then the probe file
# changed (the target relinks and is baked again), a build with nothing
# changed (no bake), and a refused probe (the build fails).
. "$KP_SRCDIR/t/lib.sh"
need cmake cc make
D=$(tmpdir cmake)
make -s -C "$KP_BUILDDIR" install prefix="$D/stage" >"$D/install.log" 2>&1
ok $? "make install into a stage ($(tail -n 1 "$D/install.log"))"
# (LIBDIR: lib, or lib/x86_64-linux-gnu in a Debian package's build)
cfg=$(find "$D/stage" -name kprewriteConfig.cmake | head -n 1)
case $cfg in */lib/cmake/kprewrite/*|*/lib/*/cmake/kprewrite/*) ok 0 "the package is installed in LIBDIR/cmake/kprewrite" ;;
    *) ok 1 "the package is installed in LIBDIR/cmake/kprewrite (${cfg:-none})" ;; esac
libdir=$(dirname "$(find "$D/stage" -name 'libkprewrite-rt.so.0' | head -n 1)")
# the example's own flags, whatever the environment's (a package build
# exports its CFLAGS): at -O0 without CET, main starts with push %rbp and
# mov %rsp, %rbp, so main+2 is inside an instruction
unset CFLAGS CPPFLAGS LDFLAGS

# the example with its sources, where the test may change them
mkdir -p "$D/src/cmake"
cp "$KP_SRCDIR/examples/wordfreq.c" "$KP_SRCDIR/examples/handlers.c" "$D/src/"
cp "$KP_SRCDIR/examples/cmake/CMakeLists.txt" "$KP_SRCDIR/examples/cmake/probes.txt" "$D/src/cmake/"
cmake -S "$D/src/cmake" -B "$D/b" -DCMAKE_PREFIX_PATH="$D/stage" -DCMAKE_C_FLAGS=-fcf-protection=none \
    >"$D/configure.log" 2>&1
ok $? "cmake configures the example: find_package(kprewrite CONFIG) ($(grep -m 1 -i error "$D/configure.log"))"
cmake --build "$D/b" >"$D/build1.log" 2>&1
ok $? "it builds ($(grep -m 1 -iE 'error|exit' "$D/build1.log"))"
like "kprewrite: baking probes into wordfreq" "$(cat "$D/build1.log")" "the POST_BUILD step ran"
like "3 probes baked" "$(cat "$D/build1.log")" "count_word (and its return), word_hash, classify_char (from the probe file) baked"
text=$example_text
example_ran "$(LD_LIBRARY_PATH="$libdir" "$D/b/wordfreq" "$text" 2>&1)" \
    "CMake (classify_char from the probe file, handlers from an OBJECT library)"
like "; 1 event definition stored" "$(cat "$D/build1.log")" "the event definition among PROBES was stored"
LD_LIBRARY_PATH="$libdir" KPREWRITE_TRACE="$D/trace.txt" "$D/b/wordfreq" "$text" >/dev/null 2>&1
is "16|the quick brown" "$(grep -c ': wh: (word_hash+0x0) s="' "$D/trace.txt")|$(sed -n 's/.*: wh: (word_hash+0x0) s="\(.*\)"$/\1/p' "$D/trace.txt" | head -n 3 | tr '\n' ' ' | sed 's/ $//')" \
    "its event records each of the 16 words, KPREWRITE_TRACE alone"

cmake --build "$D/b" >"$D/build2.log" 2>&1
ok $? "a second build succeeds"
ok $(! grep -q "baking probes" "$D/build2.log"; echo $?) "and, nothing changed, does not bake again"

printf '# classify_char no longer\n' > "$D/src/cmake/probes.txt"
cmake --build "$D/b" >"$D/build3.log" 2>&1
ok $? "the probe file changed: the build succeeds"
like "2 probes baked" "$(cat "$D/build3.log")" "it relinked and baked again, without classify_char"
like "classify_char +not baked" "$(LD_LIBRARY_PATH="$libdir" "$D/b/wordfreq" "$text" 2>&1)" \
    "the new program has no classify_char probe"

# a malformed event definition in the probe file: the build fails, naming the column
printf 'p:bad word_hash s=%%zz\n' > "$D/src/cmake/probes.txt"
cmake --build "$D/b" >"$D/build5.log" 2>&1
ok $([ $? != 0 ]; echo $?) "a malformed definition fails the build"
like "probes.txt:1:20: unknown register" "$(cat "$D/build5.log")" "and the log names FILE:LINE:COL"

# a probe in the middle of an instruction is refused: the build fails
printf 'main+2\n' > "$D/src/cmake/probes.txt"
cmake --build "$D/b" >"$D/build4.log" 2>&1
ok $([ $? != 0 ]; echo $?) "a refused probe fails the build"
like "main\\+0x2 .*refused" "$(cat "$D/build4.log")" "and the log says which and why"
done_testing
