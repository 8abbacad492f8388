# kprobe_events on baked probes (doc/kernel.md), sourced by the guest's
# /init (guest-init.sh: check, kdrive, @ENTRY@, @SYSCALL@) on a kernel built
# with CONFIG_KPROBE_EVENTS and without CONFIG_KPROBES: the kernel's
# kernel/trace/trace_kprobe.c registers its events through the kprobes API
# kprewrite provides. Events with fetch-args and $retval on baked points,
# their lines in trace_pipe in the kernel's format with the values a read(2)
# of kdrive's had, kprobe_profile's counts, a filter, a hist trigger, and a
# point that was not baked refused with its own line in error_log.
TR=/sys/kernel/tracing E=/sys/kernel/tracing/events/kprobes
mount -t tracefs nodev $TR
check "kprobe_events: tracefs has kprobe_events" [ -f $TR/kprobe_events ]
ENTRY_FN=$(echo @ENTRY@ | sed 's/+.*//')
# (the points' names in a regular expression: SYM\+0xOFF)
ENTRY_RE=$(echo @ENTRY@ | sed 's/+/\\+/') SYSCALL_RE=$(echo @SYSCALL@ | sed 's/+/\\+/')
# ksys_read's entry point (baked for its return probe; past endbr64 with IBT)
KSYS=$(awk '$2 == "r" && $3 ~ /^ksys_read\+0x[04]$/ { print $3; exit }' $K/list)
KSYS_RE=$(echo $KSYS | sed 's/+/\\+/')
NR=5   # read(2)s of 777 bytes, each a line
# kevent DESC DEFINITION: adds an event (>>: > would remove the others)
kevent() { check "kprobe_events: $1: '$2'" sh -c "echo '$2' >> $TR/kprobe_events"; }
# pipe: what trace_pipe has (the events stopped: a read of it records none)
pipe() { kdrive drain $TR/trace_pipe 0 > /tmp/pipe; }
# lines NAME REGEX: how many of kdrive's ($kp) lines in /tmp/pipe are
# NAME's event with what follows matching REGEX
lines() { grep -Ec "^ *kdrive-$kp +\[[0-9]+\] [^ ]+ +[0-9]+\.[0-9]{6}: $1: $2\$" /tmp/pipe; }
profile() { awk -v e="$1" '$1 == e { print $2, $3 }' $TR/kprobe_profile; }

echo > $TR/trace
# (kdrive fills its buffer with 0xa5 before each read: first=165)
kevent "a kprobe event on $ENTRY_FN: two registers and a byte of user memory" "p:myprobe $ENTRY_FN buf=%si:x64 count=%dx:u64 first=+u0(%si):u8"
kevent "one on ksys_read, baked for its return probe: the file descriptor and \$comm" "p:fdprobe ksys_read fd=%di:s32 count=%dx:u64 comm=\$comm"
kevent "a return event on $ENTRY_FN with \$retval" "r:myretprobe $ENTRY_FN ret=\$retval:s64"
check "kprobe_events: lists them as the kernel does" sh -c "grep -qx 'p:kprobes/myprobe $ENTRY_FN buf=%si:x64 count=%dx:u64 first=+u0(%si):u8' $TR/kprobe_events &&
    grep -Eqx 'r[0-9]*:kprobes/myretprobe $ENTRY_FN ret=.retval:s64' $TR/kprobe_events"
check "kprobe_events: their directories are in events/kprobes" [ -d $E/myprobe -a -d $E/fdprobe -a -d $E/myretprobe ]
echo 1 > $E/myprobe/enable; echo 1 > $E/fdprobe/enable; echo 1 > $E/myretprobe/enable
check "kprobe_events: enabled, @ENTRY@ stays on its jump ([OPTIMIZED])" grep -q "@ENTRY@  \[OPTIMIZED\]" $K/list
kdrive @ENTRY@ read777 $NR > /tmp/ev & kp=$!
wait $kp
echo 0 > $E/myprobe/enable; echo 0 > $E/fdprobe/enable; echo 0 > $E/myretprobe/enable
pipe
buf=$(awk '/^buffer/ { print $2 }' /tmp/ev) fd=$(awk '/^fd/ { print $2 }' /tmp/ev)
grep -E "kdrive-$kp .*(count=777 |ret=777\$)" /tmp/pipe | head -n 3 | sed 's/^/KPRW-INFO trace_pipe: /'
check "trace_pipe: $NR lines 'kdrive-$kp [CPU] FLAGS TIME: myprobe: (@ENTRY@/SIZE) buf=0x$buf count=777 first=165' (kdrive's buffer, its first byte)" \
    [ "$(lines myprobe "\($ENTRY_RE/0x[0-9a-f]+\) buf=0x$buf count=777 first=165")" = $NR ]
check "trace_pipe: $NR lines 'fdprobe: ($KSYS/SIZE) fd=$fd count=777 comm=\"kdrive\"' (kdrive's /dev/zero)" \
    [ "$(lines fdprobe "\($KSYS_RE/0x[0-9a-f]+\) fd=$fd count=777 comm=\"kdrive\"")" = $NR ]
check "trace_pipe: kdrive's 2 reads of the list too, with their own values (fd=$((fd + 1)) count=65535)" \
    [ "$(lines fdprobe "\($KSYS_RE/0x[0-9a-f]+\) fd=$((fd + 1)) count=65535 comm=\"kdrive\"")" = 2 ]
check "trace_pipe: $NR return lines 'myretprobe: (ksys_read+OFF/SIZE <- $ENTRY_FN) ret=777' (the real return address, \$retval)" \
    [ "$(lines myretprobe "\(ksys_read\+0x[0-9a-f]+/0x[0-9a-f]+ <- $ENTRY_FN\) ret=777")" = $NR ]
check "trace_pipe: each read of 777 bytes in order: ksys_read, $ENTRY_FN, its return" \
    [ "$(grep -E "kdrive-$kp .*(count=777 |ret=777\$)" /tmp/pipe | sed 's/.*: \([a-z]*\): .*/\1/' | tr '\n' ' ')" = \
      "$(for i in $(seq $NR); do printf 'fdprobe myprobe myretprobe '; done)" ]

# kprobe_profile: an event on getpid(2)'s handler, called by nothing else
kevent "one on getpid(2)'s handler" "p:getpidprobe $SYSCALL_SYM"
echo 1 > $E/getpidprobe/enable
kdrive @SYSCALL@ getpid $N > /tmp/ev & kp=$!
wait $kp
echo 0 > $E/getpidprobe/enable
pipe
check "kprobe_profile: getpidprobe hit $N times for kdrive's $N getpid(2), none missed ($(profile getpidprobe))" \
    [ "$(profile getpidprobe)" = "$N 0" ]
# (%pS names the address __do_sys_getpid, an alias of __x64_sys_getpid)
check "trace_pipe: $N lines 'getpidprobe: (__do_sys_getpid+${SYSCALL_RE#*+}/SIZE)', the address's other name" \
    [ "$(lines getpidprobe "\(__(x64|do)_sys_getpid\\+${SYSCALL_RE#*+}/0x[0-9a-f]+\)")" = $N ]

# a filter: only the reads of 777 bytes recorded
echo 'count == 777' > $E/myprobe/filter
set -- $(profile myprobe); h0=$1
echo 1 > $E/myprobe/enable
kdrive @ENTRY@ read777 $NR > /tmp/ev & kp=$!
wait $kp
kdrive @ENTRY@ read $NR > /dev/null
echo 0 > $E/myprobe/enable
set -- $(profile myprobe); h1=$1
pipe
check "filter 'count == 777': $NR lines, each count=777" \
    [ "$(grep -c ': myprobe: ' /tmp/pipe) $(lines myprobe "\($ENTRY_RE/0x[0-9a-f]+\) buf=0x$buf count=777 first=165")" = "$NR $NR" ]
check "filter: the other reads hit and were dropped (kprobe_profile +$((h1 - h0)), at least kdrive's $((2 * NR + 4)))" \
    [ $((h1 - h0)) -ge $((2 * NR + 4)) ]
echo 0 > $E/myprobe/filter

# a hist trigger (it turns the event on by itself while it is there)
check "hist trigger: 'hist:keys=count' on myprobe" sh -c "echo 'hist:keys=count' > $E/myprobe/trigger"
kdrive @ENTRY@ read777 7 > /dev/null
grep -E '^\{ count: +777 \}' $E/myprobe/hist | sed 's/^/KPRW-INFO hist: /'
check "hist trigger: '{ count: 777 } hitcount: 7' for kdrive's 7 reads of 777 bytes" grep -Eqx '\{ count: +777 \} hitcount: +7' $E/myprobe/hist
echo '!hist:keys=count' > $E/myprobe/trigger

# points that were not baked: refused, error_log says how to bake them
# (vfs_write; a return event on strncpy_from_user, baked as a kprobe only);
# a symbol that does not exist keeps the kernel's own answer
# logged COMMAND TEXT: error_log's line before COMMAND's has TEXT
logged() { awk -v c="  Command: $1" '$0 == c { l = prev } { prev = $0 } END { print l }' $TR/error_log | grep -qF "$2"; }
NB='trace_kprobe: error: Not baked into this kernel: bake it (kprewrite --kernel --probe SYM vmlinux; SYM%return for r:)'
for def in 'p:nobake vfs_write' 'r:nobakeret strncpy_from_user'; do
    check "kprobe_events: '$def' (not baked) is refused" sh -c "! echo '$def' >> $TR/kprobe_events"
    check "error_log: '$def': '$NB'" logged "$def" "$NB"
done
check "kprobe_events: no event made for them" [ ! -d $E/nobake -a ! -d $E/nobakeret ]
check "kprobe_events: a symbol that does not exist is refused" sh -c "! echo 'p:nosuch kprewrite_no_such_function' >> $TR/kprobe_events"
check "error_log: the kernel's own line for it" logged 'p:nosuch kprewrite_no_such_function' 'trace_kprobe: error: Invalid probed address or symbol'
sed 's/^/KPRW-INFO error_log: /' $TR/error_log

echo > $TR/kprobe_events
check "kprobe_events: all removed" [ "$(grep -c '' $TR/kprobe_events)" = 0 ]
check "kprobe_events: @ENTRY@ [OPTIMIZED] still" grep -q "@ENTRY@  \[OPTIMIZED\]" $K/list
