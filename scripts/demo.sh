#!/bin/sh
# README's first command: install, build, then build the example with the
# runtime, bake probes into it after linking, and run it.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
sh "$top/scripts/install-deps.sh"
sh "$top/scripts/build.sh"
stage=$top/build/stage
make -s -C "$top/build" install prefix="$stage" >/dev/null 2>&1
# the staged .pc still says the configured prefix: point it at the stage
export PATH="$stage/bin:$PATH" PKG_CONFIG_PATH="$stage/lib/pkgconfig" LD_LIBRARY_PATH="$stage/lib"
export PKG_CONFIG="pkg-config --define-variable=prefix=$stage"
work=$top/build/example
rm -rf "$work"; mkdir -p "$work"; cp "$top/examples/"*.c "$top/examples/Makefile" "$work/"
echo "== kprewrite --check on the example"
make -s -C "$work" PKG_CONFIG="$PKG_CONFIG" wordfreq.o handlers.o >/dev/null
cc -o "$work/wordfreq.unprobed" "$work/wordfreq.o" "$work/handlers.o" $($PKG_CONFIG --libs kprewrite-rt)
kprewrite --check --summary --probe main --probe 'count_*' --probe 'classify_char+4' --probe word_hash \
    "$work/wordfreq.unprobed" || true
echo "== make: link with the runtime, then bake the probes"
make -s -C "$work" PKG_CONFIG="$PKG_CONFIG" wordfreq
echo "== run the rewritten program"
"$work/wordfreq" "the quick brown fox jumps over the lazy dog. The dog sleeps, the fox trots on."
echo "== live control: the same program reading stdin, steered through its control directory"
# KPREWRITE_CTL_DIR (default \$XDG_RUNTIME_DIR/kprewrite) holds one directory per process
export KPREWRITE_CTL_DIR="$work/ctl"
line="the cat and the dog and the bird"
fifo=$work/in; mkfifo "$fifo"
"$work/wordfreq" - <"$fifo" >"$work/live.out" &
pid=$!
exec 3>"$fifo"
step() { echo "$line" >&3; sleep 0.2; }
step
echo "\$ kprewrite ctl $pid list"; kprewrite ctl "$pid" list
echo "\$ echo 'disable word_hash' > $KPREWRITE_CTL_DIR/$pid/control"
echo 'disable word_hash' >"$KPREWRITE_CTL_DIR/$pid/control"
step
echo "\$ cat $KPREWRITE_CTL_DIR/$pid/list   (one line fed while disabled: word_hash counted nothing)"
cat "$KPREWRITE_CTL_DIR/$pid/list"
echo "\$ kprewrite ctl $pid enable word_hash; kprewrite ctl $pid unoptimize count_word"
kprewrite ctl "$pid" enable word_hash; kprewrite ctl "$pid" unoptimize count_word
step
echo "\$ cat $KPREWRITE_CTL_DIR/$pid/profile   (name, hits, misses)"
cat "$KPREWRITE_CTL_DIR/$pid/profile"
exec 3>&-
wait "$pid"
cat "$work/live.out"
