#!/bin/sh
# The bash completion (completion/kprewrite): options, an option's values,
# function symbols of the image on the line for --probe, and kprewrite ctl's
# PIDs, commands and points, from a control directory.
. "$KP_SRCDIR/t/lib.sh"
need bash nm
D=$(tmpdir completion)
# complete WORD...: the completions of the last word, one a line, sorted
complete_() {
    KP_COMP=$KP_SRCDIR/completion/kprewrite bash -c '
        . "$KP_COMP" || exit 1
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
        _kprewrite
        printf "%s\n" "${COMPREPLY[@]}" | sort' complete "$@"
}
# cmp_ WORD...: the completions after "kprewrite WORD...", on one line
cmp_() { complete_ kprewrite "$@" | tr '\n' ' ' | sed 's/ $//'; }

is "--probe --probe-file" "$(cmp_ --pro)" "options: --pro"
is "compact inline shared" "$(cmp_ --detours '')" "--detours' values"
# symbols of the image named on the line: kprewrite's own (spec_add,
# spec_list_free are functions of it)
img=$KPREWRITE
like "(^| )spec_add( |$)" "$(complete_ kprewrite "$img" --probe spec_ | tr '\n' ' ')" \
    "--probe completes the image's function symbols (image before)"
got=$(KP_COMP=$KP_SRCDIR/completion/kprewrite bash -c '
    . "$KP_COMP"; COMP_WORDS=(kprewrite --probe spec_ad "$1"); COMP_CWORD=2; _kprewrite
    printf "%s\n" "${COMPREPLY[@]}"' x "$img")
like "^spec_add" "$got" "--probe completes them with the image after it"
is "" "$(complete_ kprewrite --probe spec_)" "no image on the line: no symbol guessed"
# a data symbol is not a probe point
dsym=$(nm --defined-only "$img" | awk '$2 ~ /^[DdBb]$/ && $3 ~ /^[a-z_]+$/ { print $3; exit }')
is "" "$(complete_ kprewrite "$img" --probe "$dsym" | grep -x "$dsym")" "data symbols are not offered ($dsym)"

# kprewrite ctl: a control directory as a probed process leaves it; and a
# static program (no directory), which "kprewrite ctl --static-pids" names
# -- here a stand-in kprewrite first on PATH, so that no real process of
# another test running meanwhile shows up
mkdir -p "$D/bin"
printf '%s\n' '#!/bin/sh' 'case "$*" in' '"ctl --static-pids") echo 777 ;;' \
    "\"ctl 777 list\") echo '0000000000401c80  k  tick+0x0  [OPTIMIZED]  hits 3  nmissed 0' ;;" 'esac' >"$D/bin/kprewrite"
chmod +x "$D/bin/kprewrite"
PATH=$D/bin:$PATH; export PATH
mkdir -p "$D/ctl/4242" "$D/ctl/notapid"
printf '%s\n' '0000000000401136  k  count_word+0x0  [OPTIMIZED]  hits 3  nmissed 0' \
    '0000000000401150  k  parse_line+0x8  [INT3]  hits 0  nmissed 0' > "$D/ctl/4242/list"
export KPREWRITE_CTL_DIR=$D/ctl
is "--help 4242 777" "$(cmp_ ctl '')" "ctl: the PIDs with a control directory, and the static programs"
is "tick" "$(cmp_ ctl 777 disable '')" "ctl PID disable on a static program: its points (through kprewrite ctl PID list)"
is "disable" "$(cmp_ ctl 4242 dis)" "ctl PID: its commands"
is "count_word parse_line+0x8" "$(cmp_ ctl 4242 disable '')" "ctl PID disable: the process's points"
is "0 1" "$(cmp_ ctl 4242 enabled '')" "ctl PID enabled: 0 or 1"
done_testing
