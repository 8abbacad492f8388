# Shared helpers for the shell TAP tests. Source it; call done_testing at the end.
T=0
ok() { # STATUS DESCRIPTION: status 0 passes
    T=$((T + 1))
    if [ "$1" = 0 ]; then echo "ok $T - $2"; else echo "not ok $T - $2"; fi
}
is() { # WANT GOT DESCRIPTION
    T=$((T + 1))
    if [ "$1" = "$2" ]; then
        echo "ok $T - $3"
    else
        echo "not ok $T - $3"
        printf '# want: %s\n# got:  %s\n' "$1" "$2"
    fi
}
isnt() { # UNWANTED GOT DESCRIPTION
    T=$((T + 1))
    if [ "$1" != "$2" ]; then
        echo "ok $T - $3"
    else
        echo "not ok $T - $3"
        printf '# got what it should not: %s\n' "$2"
    fi
}
like() { # ERE GOT DESCRIPTION
    T=$((T + 1))
    if printf '%s\n' "$2" | grep -Eq -- "$1"; then
        echo "ok $T - $3"
    else
        echo "not ok $T - $3"
        printf '# want match: %s\n# got: %s\n' "$1" "$2"
    fi
}
skip() { T=$((T + 1)); echo "ok $T # SKIP $1"; }
skip_all() { echo "1..0 # SKIP $1"; exit 0; }
done_testing() { echo "1..$T"; exit 0; }
need() { for t in "$@"; do command -v "$t" >/dev/null 2>&1 || skip_all "$t not found"; done; }
# A fresh private directory for one test script.
tmpdir() { d="$KP_BUILDDIR/t/tmp/$1"; rm -rf "$d"; mkdir -p "$d"; echo "$d"; }
# as_nobody_in DIR CMD...: CMD as user 65534 (nobody), its working directory
# DIR, entered as root first. The tree may lie under a directory nobody
# cannot enter (a clone in /root, a mktemp -d), so CMD's paths are relative
# to DIR, DIR is one nobody may enter (or the one whose refusal is tested),
# and a program of the build is run as a copy in DIR (nobody_copy).
as_nobody_in() { (cd "$1" && shift && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }
nobody_copy() { cp "$1" "$2/$(basename "$1").copy" && chmod 755 "$2" "$2/$(basename "$1").copy"; } # PROGRAM DIR
# The --check line for one probe, without the address column.
check1() { # IMAGE SPEC [options...]
    img=$1; spec=$2; shift 2
    "$KPREWRITE" --check "$@" --probe "$spec" "$img" 2>&1 | sed 's/^[0-9a-f]\{16\}  //'
}
# Address of a symbol, as 16 hex digits.
addr_of() { nm "$1" | awk -v s="$2" '$3 == s { printf "%016s\n", $1 }' | tr ' ' 0 | head -n 1; }
# Link flags for fixtures using the runtime built here: RT (shared) and
# RT_STATIC (after -Wl,-u,__kprewrite_pool); a sanitizer build adds its flags.
use_runtime() {
    RT="-I$KP_SRCDIR/include -L$KP_BUILDDIR/.libs -L$KP_BUILDDIR -Wl,-u,__kprewrite_pool -lkprewrite-pool -lkprewrite-rt -lpthread $KP_SAN_FLAGS"
    RT_STATIC="-L$KP_BUILDDIR -lkprewrite-pool $KP_BUILDDIR/.libs/libkprewrite-rt.a -lpthread -ldl $KP_SAN_FLAGS"
    export LD_LIBRARY_PATH="$KP_BUILDDIR/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
# In a sanitizer build the runtime library is built with ASan, which must
# come first in a process: programs not built with the sanitizer (prebuilt
# images given the runtime) get libasan preloaded. Leak checks are off
# (the programs under test are not ours to fix).
preload_sanitizer() {
    [ -n "$KP_SAN_FLAGS" ] || return 0
    export LD_PRELOAD="$($CC -print-file-name=libasan.so)"
    export ASAN_OPTIONS=detect_leaks=0
}
# What the runtime needs to mount a control directory, as found here, for
# the message of a test that got none: src/runtime/user/ctlfs.c opens
# /dev/fuse and mounts with mount(2), which needs CAP_SYS_ADMIN (root),
# else runs fusermount3 (package fuse3, scripts/install-deps.sh).
fuse_why() {
    w="uid $(id -u)"
    cap=$(awk '$1 == "CapEff:" { print $2 }' /proc/self/status 2>/dev/null)
    if [ -n "$cap" ] && [ $(( (0x$cap >> 21) & 1 )) = 1 ]; then w="$w with CAP_SYS_ADMIN"; else w="$w without CAP_SYS_ADMIN"; fi
    if [ -c /dev/fuse ]; then w="$w, /dev/fuse present"; else w="$w, no /dev/fuse (modprobe fuse)"; fi
    grep -qw fuse /proc/filesystems 2>/dev/null || w="$w, no fuse in /proc/filesystems"
    if command -v fusermount3 >/dev/null 2>&1; then w="$w, fusermount3 installed"; else w="$w, no fusermount3 (package fuse3)"; fi
    echo "$w"
}
# The example (examples/wordfreq.c, handlers.c) with its probes baked:
# example_ran OUTPUT HOW checks what it printed for example_text
example_text="the quick brown fox jumps over the lazy dog. The dog sleeps, the fox trots on."
example_ran() {
    like "count_word +16 hits" "$1" "$2: the program counts its 16 words through the baked probe"
    like "classify_char +[1-9][0-9]* hits" "$1" "$2: classify_char is baked"
    like "count_word handler: 5 words start with 't'" "$1" "$2: the handlers ran"
    like "count_word call 16:" "$1" "$2: count_word%return ran on each of the 16 calls"
}
# wait_file PATH: until PATH exists (at most 60 s); wait_lines FILE N: until
# FILE has at least N lines (at most 60 s). The caller's next check says
# what was missing when the wait ran out.
wait_file() { _w=0; while [ ! -e "$1" ] && [ $_w -lt 600 ]; do sleep 0.1; _w=$((_w + 1)); done; }
# (a file not there yet has 0 lines: a background job may open it later)
wait_lines() { _w=0; while [ "$( (wc -l <"$1") 2>/dev/null || echo 0)" -lt "$2" ] && [ $_w -lt 600 ]; do sleep 0.1; _w=$((_w + 1)); done; }
# live_start DIR CMD...: CMD (a probed test program waiting for "go" lines;
# `env VAR=... PROG ARGS` for its environment) in the background, its
# control directory DIR/ctl (KPREWRITE_CTL_DIR, exported), its stdin a fifo
# that fd 3 writes, its output in DIR/live.out and DIR/live.err; sets pid;
# returns once its events file is there. live_go N: one more "go", then
# until its output has N lines.
live_start() {
    _live=$1; shift
    mkdir -p "$_live/ctl"; chmod 700 "$_live/ctl"
    KPREWRITE_CTL_DIR=$_live/ctl; export KPREWRITE_CTL_DIR
    mkfifo "$_live/in"
    "$@" <"$_live/in" >"$_live/live.out" 2>"$_live/live.err" &
    pid=$!
    exec 3>"$_live/in"
    wait_file "$_live/ctl/$pid/events"
}
live_go() { echo go >&3; wait_lines "$_live/live.out" "$1"; }
