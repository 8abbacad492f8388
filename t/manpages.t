#!/bin/sh
# kprewrite-rt(3) against the API it documents: every function that
# include/kprewrite/kprobes.h declares is exported by libkprewrite-rt and
# has its own entry in the page (SYNOPSIS, DESCRIPTION, RETURN VALUE,
# ERRORS for those returning int); every other export is the runtime's
# internal entry point (__kprewrite_*) or a libc/libgcc function it
# interposes on purpose (listed below: a new export that is neither fails);
# every public struct field of kprobes.h is listed and described; and the
# page renders without warnings.
. "$KP_SRCDIR/t/lib.sh"
need nm
H="$KP_SRCDIR/include/kprewrite/kprobes.h"
PAGE="$KP_SRCDIR/doc/kprewrite-rt.3"
LIB="$KP_BUILDDIR/.libs/libkprewrite-rt.so.0"

# Functions the runtime defines over libc's and libgcc's, exported so that
# they come first in the lookup order (doc/runtime.md):
#   sigaction signal              record the program's SIGTRAP handler; the
#                                 runtime's int3 handler stays (trap.c)
#   sigprocmask pthread_sigmask   never block SIGTRAP or the checkpoint
#                                 signal: a blocked int3 kills (trap.c)
#   dlopen                        arm the pools of prebuilt libraries opened
#                                 later, and pin them (pools.c)
#   _Unwind_RaiseException _Unwind_Resume_or_Rethrow _Unwind_ForcedUnwind
#   pthread_exit                  put hooked return addresses back before
#                                 the stack is unwound (unwind.c)
#   _exit                         write the events the rings hold to
#                                 KPREWRITE_TRACE first (trace-env.c)
INTERPOSED="sigaction signal sigprocmask pthread_sigmask dlopen
_Unwind_RaiseException _Unwind_Resume_or_Rethrow _Unwind_ForcedUnwind pthread_exit _exit
execve execv execvp execvpe execl execlp execle fexecve"

# The lines of one section of the page (.SH NAME or .SH "NAME"), up to the next.
section() {
    awk -v s="$1" '
        /^\.SH/ { t = $0; sub(/^\.SH[ \t]+/, "", t); gsub(/"/, "", t); on = (t == s); next }
        on' "$PAGE"
}

[ -r "$H" ] && [ -r "$PAGE" ]; ok $? "kprobes.h and kprewrite-rt.3 are there"

# the functions kprobes.h declares: "int name(...);" at the start of a line
funcs=$(sed -n 's/^[A-Za-z_][A-Za-z0-9_ ]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)(.*);[ \t]*$/\1/p' "$H" | grep -v '^typedef' | sort -u)
intfuncs=$(sed -n 's/^int[ \t][ \t]*\([A-Za-z_][A-Za-z0-9_]*\)(.*);[ \t]*$/\1/p' "$H" | sort -u)
n=$(echo $funcs | wc -w)
[ "$n" -ge 14 ]; ok $? "kprobes.h declares the API's functions ($n)"

# 1a. every declared function is exported by the library
[ -r "$LIB" ]; ok $? "the runtime library is built ($LIB)"
exports=$(nm -D --defined-only "$LIB" 2>/dev/null | awk 'NF >= 3 { sub(/@.*/, "", $3); print $2, $3 }')
missing=
for f in $funcs; do
    printf '%s\n' "$exports" | grep -qx "[TtWi] $f" || missing="$missing $f"
done
is "" "$missing" "every function kprobes.h declares is exported by libkprewrite-rt"

# 1c. every other export is internal (__kprewrite_*) or interposed on purpose
extra=
for s in $(printf '%s\n' "$exports" | awk '{ print $2 }' | sort -u); do
    case $s in __kprewrite_*) continue ;; esac
    case " $(echo $funcs $INTERPOSED) " in *" $s "*) continue ;; esac
    extra="$extra $s"
done
is "" "$extra" "every other export is __kprewrite_* or an interposed libc/libgcc function"
gone=
for s in $INTERPOSED; do
    printf '%s\n' "$exports" | awk '{ print $2 }' | grep -qx "$s" || gone="$gone $s"
done
is "" "$gone" "the interposed functions listed here are all still exported"

# 1b. every declared function has its own entry in the page
name=$(section NAME | tr ',' ' ')
synopsis=$(section SYNOPSIS)
description=$(section DESCRIPTION)
retval=$(section "RETURN VALUE")
errors=$(section ERRORS)
for f in $funcs; do
    why=
    printf '%s\n' $name | grep -qx "$f" || why="$why; not in NAME"
    printf '%s\n' "$synopsis" | grep -Eq "^\.BI \"(int|void) $f\(" || why="$why; no '.BI \"int $f(' line in SYNOPSIS"
    printf '%s\n' "$description" | grep -Eq "^\.BR $f \(\)" || why="$why; no '.BR $f ()' line in DESCRIPTION"
    printf '%s\n' "$retval" | grep -qw "$f" || why="$why; not in RETURN VALUE"
    case " $(echo $intfuncs) " in
    *" $f "*) printf '%s\n' "$errors" | grep -qw "$f" || why="$why; not in ERRORS" ;;
    esac
    is "" "$why" "kprewrite-rt(3) documents $f (NAME, SYNOPSIS, DESCRIPTION, RETURN VALUE, ERRORS)"
done

# 2. every public field (not __*) of every struct of kprobes.h: declared in
# the page's listing of that struct, and named in italics where described
structs=$(sed -n 's/^struct \([A-Za-z_][A-Za-z0-9_]*\) {.*/\1/p' "$H")
[ -n "$structs" ]; ok $? "kprobes.h defines structs ($(echo $structs))"
for st in $structs; do
    # the public fields: the last word before ';' (arrays and attributes dropped)
    fields=$(awk -v s="$st" '
        $0 ~ "^struct " s " \\{" { on = 1; next }
        on && /^\};/ { on = 0 }
        on {
            sub(/\/\*.*/, ""); sub(/__attribute__.*;/, ";")
            if (!index($0, ";")) next
            sub(/;.*/, ""); sub(/\[[^]]*\]/, ""); sub(/[ \t]+$/, "")
            n = split($0, w, /[ \t*]+/); f = w[n]
            if (f != "" && f !~ /^__/) print f
        }' "$H")
    [ -n "$fields" ]; ok $? "struct $st has public fields ($(echo $fields))"
    listing=$(awk -v s="$st" '
        $0 ~ "^struct " s " \\{" { on = 1; next }
        on && /^\};/ { on = 0 }
        on' "$PAGE")
    missing=
    for f in $fields; do
        printf '%s\n' "$listing" | grep -Eq "[ *]$f(\[\])?;" || missing="$missing $f(listing)"
        grep -Eq "^\.I[RB]? +$f( |$)|\\\\fI$f\\\\f" "$PAGE" || missing="$missing $f(.I)"
    done
    is "" "$missing" "kprewrite-rt(3) lists and describes every public field of struct $st"
done

# 3. the page renders without warnings
if command -v man >/dev/null 2>&1; then
    w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$PAGE" 2>&1 >/dev/null; echo "rc=$?")
    is "rc=0" "$w" "man --warnings renders kprewrite-rt(3) without a warning"
else
    skip "man not found"
fi
if command -v groff >/dev/null 2>&1; then
    w=$(groff -man -Tutf8 -ww -z "$PAGE" 2>&1; echo "rc=$?")
    is "rc=0" "$w" "groff -ww renders kprewrite-rt(3) without a warning"
    # and kprewrite(1), where a line starting with a table's name (.return_sites)
    # was a macro call, and the names vanished
    w=$(groff -man -Tutf8 -ww -z "$KP_SRCDIR/doc/kprewrite.1" 2>&1; echo "rc=$?")
    is "rc=0" "$w" "groff -ww renders kprewrite(1) without a warning"
else
    skip "groff not found"
    skip "groff not found"
fi
done_testing
