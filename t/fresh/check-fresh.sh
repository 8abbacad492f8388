#!/bin/sh
# make check-fresh (TAP): README's two commands on a fresh Debian 12 machine,
# wherever the tree is cloned. A minimal Debian 12 root (debootstrap
# --variant=minbase bookworm from the Debian mirror, cached in
# BUILDDIR/fresh/base.tar, made again when older than KP_FRESH_MAX_DAYS=7
# days) is unpacked anew; the clean tree is copied into it twice, into
# /root/kprewrite and into DIR/kprewrite for DIR made by mktemp -d (both
# parents mode 0700, closed to other users); in each, as root in a chroot
# with /proc, /sys and /dev in place, `sh scripts/demo.sh` then `sh
# scripts/test.sh`, kernels, corpus and this check left out (KP_KERNEL=0
# KP_CORPUS=0 KP_FRESH=0). In /root the whole test command runs (normal,
# ASan+UBSan, distcheck, check-deb); under mktemp -d the normal suite only
# (KP_SANITIZERS=0 KP_DISTCHECK=0 KP_DEB=0): what depends on the tree's
# place is the same in every build, and the four suites twice do not fit
# CI's time (doc/hardening.md). Everything is unmounted at the end, on
# failure and on interruption too; the root is removed (KP_FRESH_KEEP=1
# keeps it). Each inner command's success is one TAP line; the inner
# counts are summed on the last line.
#
# The tree copied in: in a git checkout, the commit checked out (git archive
# HEAD: what a clone gives); KP_FRESH_TREE=work takes the working files as
# they are instead (tracked and untracked, not ignored), to try uncommitted
# work. Not a git checkout (a release tarball): its files, configured build
# directories left out.
# usage: check-fresh.sh SRCDIR BUILDDIR
src=${1:?usage: check-fresh.sh SRCDIR BUILDDIR}; build=${2:?}
here=$(cd "$(dirname "$0")" && pwd)
W=$build/fresh R=$build/fresh/root
SUITE=bookworm VARIANT=minbase
MIRROR=${KP_FRESH_MIRROR:-http://deb.debian.org/debian}
SECURITY=${KP_FRESH_SECURITY:-http://deb.debian.org/debian-security}
. "$here/root.sh"
n=0 failed=0 ipass=0 ifail=0 iskip=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
bail() { echo "Bail out! $*"; exit 1; }
[ "$(id -u)" = 0 ] || bail "a chroot needs root"
for t in debootstrap chroot mount umount tar; do
    command -v $t >/dev/null || PATH=$PATH:/usr/sbin:/sbin command -v $t >/dev/null || bail "$t not found (scripts/install-deps.sh)"
done
export PATH="$PATH:/usr/sbin:/sbin"
mkdir -p "$W"

# nothing stays mounted or running in the root, however this ends
cleanup() {
    trap - EXIT INT TERM HUP
    kill_inside "$R" >/dev/null
    unmount_under "$R"
    [ "${KP_FRESH_KEEP:-0}" = 1 ] || remove_root "$R"
}
trap cleanup EXIT
trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP

# cpu: sets cpu_now, the CPU seconds of the processes this shell has
# waited for (`times` run here: in a command substitution it would report
# that subshell's, always 0)
cpu() {
    times >"$W/times"
    cpu_now=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] } printf "%d\n", n }' "$W/times")
}
# part NAME CMD...: CMD in the root (at most KP_FRESH_TIMEOUT seconds,
# 10800), its output in $W/NAME.log, each line stamped with the seconds since
# it began; sets prc (its exit status), secs and cpus (CPU seconds). It
# runs in the background so that a signal reaches the trap at once; wait
# reaps the whole pipeline (its CPU time counts once reaped).
part() {
    name=$1; shift
    t0=$(date +%s); cpu; c0=$cpu_now
    rm -f "$W/$name.rc"
    { timeout -s KILL "${KP_FRESH_TIMEOUT:-10800}" chroot "$R" /usr/bin/env -i HOME=/root USER=root LOGNAME=root \
        SHELL=/bin/sh PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
      echo $? >"$W/$name.rc"; } 2>&1 |
        while IFS= read -r l; do printf '[%5d] %s\n' $(( $(date +%s) - t0 )) "$l"; done >"$W/$name.log" &
    wait
    prc=$(cat "$W/$name.rc" 2>/dev/null || echo 1)
    cpu; secs=$(( $(date +%s) - t0 )) cpus=$(( cpu_now - c0 ))
}
# at LOG PATTERN: the stamp of LOG's first line matching PATTERN (ERE)
at() { grep -E -m 1 "^\[ *[0-9]+\] ($2)" "$1" | sed 's/^\[ *\([0-9]*\)\].*/\1/'; }
# last LOG: its last line, unstamped
last() { tail -n 1 "$1" | sed 's/^\[ *[0-9]*\] //'; }

# the tree to copy in (see above): git-head, git-work or files
if command -v git >/dev/null && [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$src" && pwd -P)" ]; then
    if [ "${KP_FRESH_TREE:-head}" = work ]; then tree=git-work; what="the working files"
    else tree=git-head; what="git archive HEAD ($(git -C "$src" rev-parse --short HEAD))"; fi
else
    tree=files what="the tree's files"
    [ ! -f "$src/config.status" ] || bail "$src is configured in place: its build would be copied in"
fi
tree_tar() {
    case $tree in
        git-head) git -C "$src" archive --format=tar HEAD ;;
        git-work) git -C "$src" ls-files -z --cached --others --exclude-standard |
                      tar -C "$src" --null --ignore-failed-read -T - -cf - 2>/dev/null ;;
        files) tar -C "$src" --exclude-tag-all=config.status --exclude=./build --exclude=./build-san \
                   --exclude=./_build --exclude=./t/tmp --exclude=./autom4te.cache -cf - . ;;
    esac
}

# --- the root ----------------------------------------------------------------------
how=$(fresh_base) || bail "debootstrap --variant=$VARIANT $SUITE from $MIRROR failed ($W/debootstrap.log)"
ok 0 "a Debian 12 root: debootstrap --variant=$VARIANT $SUITE from $MIRROR ($how)"
fresh_root || bail "cannot unpack $W/base.tar into $R"
bind_root || bail "cannot mount /proc, /sys and /dev in $R"
fresh=$(chroot "$R" sh -c 'for t in cc gcc make gawk git; do command -v $t; done')
ok $([ -z "$fresh" ]; echo $?) "it is fresh: no compiler, make, gawk or git before the commands run${fresh:+ (has $fresh)}"

# --- README's two commands, in each place ----------------------------------------------------
# place LABEL PARENT KNOBS: the tree copied to PARENT/kprewrite, the two
# commands run there (the test command with KNOBS, NAME=VALUE words)
place() {
    label=$1 parent=$2 knobs=$3
    dest=$parent/kprewrite
    tree_tar | chroot "$R" sh -c 'umask 022 && mkdir -p "$1" && tar -x --no-same-owner --no-same-permissions -C "$1" -f -' \
        sh "$dest"
    rc=$?
    files=$(chroot "$R" find "$dest" -type f | wc -l)
    ok $([ $rc -eq 0 ] && [ -f "$R$dest/scripts/test.sh" ] && [ "$(stat -c %a "$R$parent")" = 700 ]; echo $?) \
        "$dest: $what copied in ($files files), under $parent, mode $(stat -c %a "$R$parent")"

    part "$label-demo" sh -c "cd '$dest' && sh scripts/demo.sh"
    log=$W/$label-demo.log
    grep -Eq '^\[ *[0-9]+\] count_word +16 hits' "$log"; hits=$?
    # when install-deps ended: apt's last words in the root (none: nothing to install)
    inst=$(( $(stat -c %Y "$R/var/log/apt/history.log" 2>/dev/null || echo "$t0") - t0 ))
    [ $inst -ge 0 ] || inst=0
    ok $([ "$prc" = 0 ] && [ $hits = 0 ]; echo $?) "$dest: sh scripts/demo.sh: exit $prc, the example counts its \
16 words ($secs s: install-deps $inst s, build $(( $(at "$log" '== kprewrite --check') - inst )) s; CPU $cpus s)"
    [ "$prc" = 0 ] || tail -n 15 "$log" | sed 's/^/# /'

    # the kernels, the corpus and this check are left out in every place
    part "$label-test" env KP_KERNEL=0 KP_CORPUS=0 KP_FRESH=0 $knobs sh -c "cd '$dest' && sh scripts/test.sh"
    log=$W/$label-test.log
    line=$(last "$log")
    set -- $(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed\(, \([0-9]*\) skipped\)\{0,1\}$/\1 \2 \4/p')
    ipass=$((ipass + ${1:-0})) ifail=$((ifail + ${2:-1})) iskip=$((iskip + ${3:-0}))
    ok $([ "$prc" = 0 ] && [ "${2:-1}" = 0 ]; echo $?) "$dest: ${knobs:+$knobs }sh scripts/test.sh: exit $prc, $line ($secs s; CPU $cpus s)"
    # each suite's line and when it ended; what did not pass
    grep -E '^\[ *[0-9]+\] ([a-z+]+: [0-9]+ passed|\[|== |FAIL|ERROR|not ok)' "$log" | head -n 40 | sed 's/^/# /'
    left=$(kill_inside "$R")
    ok $([ -z "$left" ]; echo $?) "$dest: no process of the run is left running${left:+: $(echo "$left" | tr '\n' ';')}"
}
# KP_FRESH_SCOPE=quick (CI's, from the test command): the mktemp -d place
# only, where the parent is closed to other users as /root is, with the
# normal suite: what depends on the tree's place or on a missing tool
# shows there; full (make check-fresh's default): both places as above
case ${KP_FRESH_SCOPE:-full} in
    quick) ;;
    full) place root /root "" ;;
    *) bail "KP_FRESH_SCOPE=$KP_FRESH_SCOPE: quick or full" ;;
esac
tmp=$(chroot "$R" mktemp -d)
place mktemp "$tmp" "KP_SANITIZERS=0 KP_DISTCHECK=0 KP_DEB=0"
awk=$(chroot "$R" sh -c 'command -v gawk; readlink -f "$(command -v awk)"' | tr '\n' ' ')
ok $([ "$awk" = "/usr/bin/mawk " ]; echo $?) "the tests ran with mawk, the awk of a fresh machine (no gawk installed): $awk"

kill_inside "$R" >/dev/null
unmount_under "$R"
ok $? "nothing stays mounted in the root ($(mounts_under "$R" | wc -l) mounts)"
echo "1..$n"
echo "check-fresh: $((n - failed)) passed, $failed failed; inside: $ipass passed, $ifail failed, $iskip skipped"
[ $failed -eq 0 ]
