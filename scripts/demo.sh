#!/bin/sh
# README's first command: install, build, and check probes on the bundled example.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
sh "$top/scripts/install-deps.sh"
sh "$top/scripts/build.sh"
cd "$top/build"
cc -O2 -o example "$top/examples/wordfreq.c"
echo "== kprewrite --check on examples/wordfreq.c (built with cc -O2)"
set +e
./kprewrite --check --summary --probe main --probe 'count_*' --probe 'classify_char+4' \
    --probe 'word_hash%return' example
rc=$?
echo "== exit status $rc (0 all optimized, 2 some int3, 3 some refused, 1 error)"
