# The corpus workloads (sourced by t/corpus/run.sh; POSIX sh).
#
# Each workload NAME has
#   gen_NAME   makes its inputs once a run, in $IN, with the original programs
#   wl_NAME    runs it in a fresh empty directory (the current one) and
#              prints what must not change: the program's output, or the
#              checksums of the files it wrote (sum FILE). Nothing printed
#              may depend on time, pids, addresses or thread scheduling.
# t/corpus/corpus.list names the files each workload exercises.
#
# Inside wl_NAME:
#   kp CMD ARGS...  runs one command of the program under test: with the
#                   probed copy of a library first in LD_LIBRARY_PATH when a
#                   library is the file under test; its standard error goes
#                   to the run's log (KPREWRITE_REPORT's counts too) and its
#                   exit status is recorded (a status by a signal is a crash)
#   $(bin PATH)     the program PATH, or its probed copy when PATH is the file
#                   under test
#   sum [FILE]      a short checksum of FILE (or standard input)
#   $IN $DATA       the generated inputs; t/corpus/data (scripts, keys)
#   $PORT           a TCP port on 127.0.0.1 for servers (a fixed number)
# Commands not run by kp (sha256sum, sort, the clients of a server) are the
# harness: they always run the original programs and libraries.

sum() { sha256sum "$@" | cut -c1-16; }

bin() { if [ "$1" = "$KP_SUBJECT" ]; then echo "$KP_PROBED"; else echo "$1"; fi; }

kp() {
    _kp_name=${1##*/}
    if [ -n "$KP_LIBDIR" ]; then
        if [ -n "$KP_LDDCHECK" ]; then   # (the report run only: not timed)
            _kp_p=$(command -v "$1")
            if LD_LIBRARY_PATH="$KP_LIBDIR" ldd "$_kp_p" 2>/dev/null | grep -q " $KP_LIBDIR/"; then
                echo "$_kp_p" >>"$KP_LDDCHECK"
            fi
        fi
        LD_LIBRARY_PATH="$KP_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@" 2>>"$KP_LOG"
    else
        "$@" 2>>"$KP_LOG"
    fi
    _kp_rc=$?
    echo "$_kp_name $_kp_rc" >>"$KP_STATUS"
    # a core (core_pattern "core") would be overwritten by the next crash
    [ $_kp_rc -gt 128 ] && [ -f core ] && mv core "core.$(wc -l <"$KP_STATUS" | tr -d ' ').$_kp_name"
    return $_kp_rc
}

# kperr FILE CMD ARGS...: kp, with the command's standard error (but not
# the runtime's "kprewrite: " lines) also kept in FILE, to be printed
kperr() {
    _kpe=$1; shift
    _kpe_log=$KP_LOG; KP_LOG=$_kpe.raw
    kp "$@"
    _kpe_rc=$?
    KP_LOG=$_kpe_log
    grep -v '^kprewrite: ' "$_kpe.raw" >"$_kpe"
    cat "$_kpe.raw" >>"$KP_LOG"
    rm -f "$_kpe.raw"
    return $_kpe_rc
}

# waitport PIDOFSERVERSHELL CMD...: retry CMD (a client's ping) for up to 30 s
# while the server's shell lives; 0 when it answered
waitport() {
    _wp=$1; shift
    _i=0
    while [ $_i -lt 300 ]; do
        "$@" >/dev/null 2>&1 && return 0
        kill -0 "$_wp" 2>/dev/null || return 1
        sleep 0.1; _i=$((_i + 1))
    done
    return 1
}

text() { # LINES SEED: deterministic text (the same with mawk and gawk)
    awk -v LINES="$1" -v SEED="$2" -f "$DATA/text.awk"
}

# ---- interpreters: errors unwound by longjmp ---------------------------------

gen_lua() { :; }
wl_lua() {
    cp "$DATA/errors.lua" .
    kp "$(bin /usr/bin/lua5.4)" errors.lua
    echo "exit $?"
}

gen_python() { :; }
wl_python() {
    cp "$DATA/errors.py" .
    PYTHONHASHSEED=0 kp "$(bin /usr/bin/python3.11)" -I errors.py
    echo "exit $?"
}

gen_perl() { :; }
wl_perl() {
    cp "$DATA/errors.pl" .
    PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 kp "$(bin /usr/bin/perl)" errors.pl
    echo "exit $?"
}

gen_tcl() { :; }
wl_tcl() {
    cp "$DATA/errors.tcl" .
    kp "$(bin /usr/bin/tclsh8.6)" errors.tcl
    echo "exit $?"
}

# JavaScript: JSON, regexps, arrays, strings, BigInt, exceptions, zlib and
# crypto through V8's builtins (the same output with node 18 and 20)
gen_node() { :; }
wl_node() {
    cp "$DATA/builtins.js" .
    kp "$(bin /usr/bin/node)" builtins.js
    echo "exit $?"
}

# ---- servers on 127.0.0.1 ----------------------------------------------------------

gen_redis() {
    [ -s "$IN/redis.cmds" ] && return
    # 16000 commands: strings, lists, sets, sorted sets, hashes, and Lua
    # scripts that fail (a Lua error inside redis unwinds with longjmp)
    awk 'function rnd(n) { s = (s * 16807) % 2147483647; return s % n }
    BEGIN { s = 7
        for (i = 0; i < 2000; i++) {
            k = rnd(500)
            print "SET s:" k " v" i
            print "INCRBY n:" rnd(50) " " rnd(1000)
            print "APPEND s:" rnd(500) " +" i
            print "LPUSH l:" rnd(20) " e" i
            print "SADD set:" rnd(10) " m" rnd(300)
            print "ZADD z:" rnd(5) " " rnd(100000) " m" rnd(1000)
            print "HSET h:" rnd(30) " f" rnd(40) " " i
            if (i % 10 == 0) {
                print "GET s:" rnd(500)
                print "LRANGE l:" rnd(20) " 0 5"
                print "SINTERCARD 2 set:" rnd(10) " set:" rnd(10)
                print "ZRANGEBYSCORE z:" rnd(5) " " rnd(50000) " +inf WITHSCORES LIMIT 0 4"
                print "HGETALL h:" rnd(30)
                print "EVAL \"return redis.call(\x27INCR\x27, KEYS[1])\" 1 s:" rnd(500)
                print "EVAL \"local ok, e = pcall(redis.call, \x27LPUSH\x27, KEYS[1], \x27x\x27) return tostring(ok)\" 1 s:" rnd(500)
                print "EVAL \"error(\x27boom " i "\x27)\" 0"
            }
        }
        print "SORT l:3 ALPHA LIMIT 0 10"
        print "ZCARD z:1"
        print "SCARD set:4"
    }' >"$IN/redis.cmds"
}
wl_redis() {
    cli() { redis-cli -p "$PORT" "$@"; }
    kp "$(bin /usr/bin/redis-server)" --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --dir . --pidfile "$PWD/redis.pid" --enable-debug-command local >>"$KP_LOG" &
    srv=$!
    if waitport $srv cli ping; then
        cli <"$IN/redis.cmds" | sum
        redis-benchmark -p "$PORT" -c 4 -P 8 -n 20000 -t set,get,incr,lpush,rpop,sadd,hset,zadd -q >/dev/null 2>&1
        cli dbsize
        cli debug digest
        cli shutdown nosave
    else
        echo "redis-server did not answer"
        [ -s redis.pid ] && kill "$(cat redis.pid)"
    fi
    wait $srv
}

gen_nginx() {
    [ -d "$IN/www" ] && return
    mkdir -p "$IN/www/sub"
    text 30000 11 | awk -v dir="$IN/www" '
        { f = dir "/f" (NR % 300) ".txt"; print > f; if (NR % 300 == 299) close(f) }
        NR % 97 == 0 { print > (dir "/sub/s" (NR % 13) ".bin") }'
    echo '<html><body>index</body></html>' >"$IN/www/index.html"
}
wl_nginx() {
    mkdir -p tmp
    cat >nginx.conf <<EOF
daemon off;
master_process on;
worker_processes 2;
user root;
pid $PWD/nginx.pid;
error_log $PWD/error.log notice;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $PWD/tmp/body; proxy_temp_path $PWD/tmp/proxy;
    fastcgi_temp_path $PWD/tmp/fcgi; uwsgi_temp_path $PWD/tmp/uwsgi; scgi_temp_path $PWD/tmp/scgi;
    types { text/plain txt; text/html html; application/octet-stream bin; }
    gzip on; gzip_types text/plain; gzip_min_length 64; gzip_comp_level 6;
    server {
        listen 127.0.0.1:$PORT;
        root $IN/www;
        location / { try_files \$uri \$uri.txt =404; }
        location ~* ^/doc/(\d+)/([a-z]+)\$ { rewrite ^/doc/(\d+)/([a-z]+)\$ /f\$1.txt last; }
        location = /teapot { return 418 "short and stout\n"; }
        location ~ \.bin\$ { gzip off; }
    }
}
EOF
    kp "$(bin /usr/sbin/nginx)" -e "$PWD/error.log" -p "$PWD" -c "$PWD/nginx.conf" &
    srv=$!
    u=http://127.0.0.1:$PORT
    if waitport $srv curl -sf "$u/index.html"; then
        clients=
        for c in 1 2; do
            awk -v u="$u" -v c=$c 'BEGIN { for (i = 0; i < 900; i++) {
                r = (i * 7 + c) % 300
                if (i % 5 == 0) print "url = \"" u "/doc/" r "/x\""
                else if (i % 11 == 0) print "url = \"" u "/nope" i "\""
                else if (i % 13 == 0) print "url = \"" u "/sub/s" (i % 13) ".bin\""
                else print "url = \"" u "/f" r "\"" } }' >urls$c
            curl -s --compressed -K urls$c -w '%{http_code}\n' >out$c 2>&1 &
            clients="$clients $!"
        done
        # shellcheck disable=SC2086
        wait $clients
        sum out1; sum out2
        curl -s -r 100-299 "$u/f7.txt" | sum
        curl -s -I "$u/f8.txt" | grep -c -i '^content-length'
        curl -s "$u/teapot" -w '%{http_code}\n'
        kill -QUIT "$(cat nginx.pid)"
    else
        echo "nginx did not answer"
        [ -s nginx.pid ] && kill "$(cat nginx.pid)"
    fi
    wait $srv
    # a worker that died is respawned by the master: count it as a crash
    sed -n 's/.*worker process [0-9]* exited on signal \([0-9]*\).*/nginx-worker \1/p' error.log |
        awk '{ print $1, 128 + $2 }' >>"$KP_STATUS"
    cat error.log >>"$KP_LOG"
}

gen_memcached() { gen_nginx; }
wl_memcached() {
    s=--servers=127.0.0.1:$PORT
    kp "$(bin /usr/bin/memcached)" -u root -l 127.0.0.1 -p "$PORT" -U 0 -t 2 -m 64 &
    srv=$!
    if waitport $srv memcping "$s"; then
        for t in 'ascii version' 'ascii set' 'ascii get' 'ascii gets' 'ascii add' 'ascii cas' 'ascii delete' \
            'ascii incr' 'ascii decr' 'ascii append' 'ascii prepend' 'ascii flush' 'binary noop' 'binary set' \
            'binary add' 'binary replace' 'binary delete' 'binary get' 'binary getk' 'binary incr' 'binary decr' \
            'binary append' 'binary prepend' 'binary version' 'binary flush'; do
            memccapable -h 127.0.0.1 -p "$PORT" -T "$t" 2>&1
        done
        (cd "$IN/www" && memccp "$s" f*.txt && memccat "$s" $(ls f*.txt | sort)) | sum
        memcslap "$s" --concurrency=4 --execute-number=4000 --test=set >/dev/null 2>&1
        memcslap "$s" --concurrency=4 --execute-number=4000 --test=get >/dev/null 2>&1
        memcexist "$s" f1.txt f299.txt nosuchkey; echo "exist $?"
        (cd "$IN/www" && memccat "$s" f5.txt f250.txt) | sum
        pid=$(memcstat "$s" | sed -n 's/^[[:space:]]*pid: //p')
        kill "$pid"
    else
        echo "memcached did not answer"
        kill $srv
    fi
    wait $srv
}

# Workloads with processes that end by a signal (no KPREWRITE_REPORT from
# them, their events written): in trace mode their events and drops must
# cover the hits reported, not equal them (run.sh)
TRACE_SIGNAL_DEATHS="memcached libc"
# Go programs: at Go's exit the counts are printed while the other threads
# run on, their events written after (go-guard.c): the same rule
TRACE_EXIT_RACES="fzf"

# ---- the C library itself: signals, fork, threads ----------------------------------------
# libc.so.6 with every entry (or every return) probed: the runtime is its
# DT_NEEDED and interposes nothing, so it keeps SIGTRAP through probes on
# libc's __sigaction and pthread_sigmask (doc/runtime.md). Every program
# below, and every one they start, runs on the probed copy.

gen_libc() { gen_text; }
wl_libc() {
    kp bash "$DATA/signals.sh" "$IN/text"
    echo "bash $?"
    kp make -s -j2 -f "$DATA/libc.mk" IN="$IN/text"
    echo "make $?"
    head -c 3000000 "$IN/text" | kp sort --parallel=2 -S 1M | sum
    kp xargs -P 2 -n 1 sh -c 'head -n "$1" "$0" | wc -l' "$IN/text" <<EOF2 | sort -n
1000
2000
3000
4000
EOF2
}

# ---- multi-threaded compressors --------------------------------------------------------

gen_text() { [ -s "$IN/text" ] || text 300000 42 >"$IN/text"; }

gen_pigz() { gen_text; }
wl_pigz() {
    p=$(bin /usr/bin/pigz)
    kp "$p" -p 2 -n -6 -c "$IN/text" >t.gz; sum t.gz
    kp "$p" -p 2 -d -c t.gz | sum
    head -c 4000000 "$IN/text" | kp "$p" -p 2 -n -1 --rsyncable >r.gz; sum r.gz
    kp "$p" -t r.gz; echo "test $?"
}

gen_zstd() { gen_text; }
wl_zstd() {
    p=$(bin /usr/bin/zstd)
    kp "$p" -q -T2 -9 -c "$IN/text" >t.zst; sum t.zst
    kp "$p" -q -d -c t.zst | sum
    head -c 3000000 "$IN/text" | kp "$p" -q -T2 -3 --long=24 >l.zst; sum l.zst
    kp "$p" -q -t l.zst; echo "test $?"
}

gen_xz() { gen_text; [ -s "$IN/text4" ] || head -c 4000000 "$IN/text" >"$IN/text4"; }
wl_xz() {
    p=$(bin /usr/bin/xz)
    kp "$p" -T2 -2 --block-size=1MiB -c "$IN/text4" >t.xz; sum t.xz
    kp "$p" -T2 -d -c t.xz | sum
    kp "$p" --robot -l t.xz | grep -v '^totals' | cut -f1-5
    head -c 600000 "$IN/text" | kp "$p" --format=lzma -1 >t.lzma; sum t.lzma
}

gen_pbzip2() { gen_text; [ -s "$IN/text6" ] || head -c 6000000 "$IN/text" >"$IN/text6"; }
wl_pbzip2() {
    p=$(bin /usr/bin/pbzip2)
    kp "$p" -p2 -b9 -c "$IN/text6" >t.bz2; sum t.bz2
    kp "$p" -p2 -d -c t.bz2 | sum
    kp "$p" -t t.bz2; echo "test $?"
}

# ---- C++ that throws and catches: qpdf on damaged PDFs -----------------------------------

gen_qpdf() {
    [ -s "$IN/bad2.pdf" ] && return
    for d in 0 1 2; do awk -v PAGES=500 -v DAMAGE=$d -f "$DATA/pdf.awk" >"$IN/bad$d.pdf"; done
}
wl_qpdf() {
    p=$(bin /usr/bin/qpdf)
    for d in 0 1 2; do
        ln -s "$IN/bad$d.pdf" .
        kperr e$d "$p" --check bad$d.pdf; echo "check $d: $?"; cat e$d
        kp "$p" --static-id --qdf --object-streams=disable bad$d.pdf o$d.pdf 2>/dev/null; echo "qdf $d: $? $(sum o$d.pdf)"
    done
    kp "$p" --static-id --object-streams=generate --compress-streams=y bad1.pdf c.pdf 2>/dev/null; echo "os $? $(sum c.pdf)"
    kp "$p" --json bad2.pdf 2>/dev/null | sum
    kp "$p" --static-id --pages bad1.pdf 1-100 bad2.pdf 300-z -- bad0.pdf m.pdf 2>/dev/null; echo "pages $? $(sum m.pdf)"
}

# ---- coroutines (ucontext): qemu-img ------------------------------------------------------

gen_qemu() {
    [ -s "$IN/disk.raw" ] && return
    gen_text
    head -c 25165824 "$IN/text" >"$IN/disk.raw"
    truncate -s 64M "$IN/disk.raw"
}
wl_qemu() {
    p=$(bin /usr/bin/qemu-img)
    kp "$p" convert -f raw -O qcow2 -c -o compression_type=zstd "$IN/disk.raw" z.qcow2; echo "zstd $? $(sum z.qcow2)"
    kp "$p" convert -f raw -O qcow2 -c "$IN/disk.raw" g.qcow2; echo "zlib $? $(sum g.qcow2)"
    kp "$p" convert -f qcow2 -O raw z.qcow2 back.raw; echo "back $? $(sum back.raw)"
    kp "$p" check z.qcow2
    kp "$p" compare -f qcow2 -F qcow2 z.qcow2 g.qcow2; echo "compare $?"
    kp "$p" map --output=json g.qcow2 | sum
    kp "$p" create -q -f qcow2 -b z.qcow2 -F qcow2 over.qcow2
    kp "$p" commit -q over.qcow2; echo "commit $?"
    kp "$p" convert -O raw over.qcow2 over.raw; echo "over $? $(sum over.raw)"
}

# ---- Rust: ripgrep and fd over a tree of files -----------------------------------------------

gen_tree() {
    [ -d "$IN/tree" ] && return
    text 60000 23 | awk -v dir="$IN/tree" '
        BEGIN { for (a = 0; a < 8; a++) for (b = 0; b < 10; b++) system("mkdir -p " dir "/d" a "/e" b) }
        { f = dir "/d" (NR % 8) "/e" (int(NR / 8) % 10) "/file" (NR % 500) (NR % 3 ? ".txt" : ".log")
          print > f; if (NR > 59000) close(f) }'
}
gen_rg() { gen_tree; }
wl_rg() {
    p=$(bin /usr/bin/rg)
    ln -s "$IN/tree" tree   # (relative names in the output; --no-ignore: wherever the work directory is)
    kp "$p" --no-ignore -j2 -c 'error|warning' tree | sort | sum
    kp "$p" --no-ignore --sort path -n '\b0x[0-9a-f]{5}\b' tree | sum
    kp "$p" --no-ignore -j2 -o -w '[a-z]+@[a-z]+\.example\.org' tree --no-filename | sort | uniq -c | sort -k1,1nr -k2 | head -5
    kp "$p" --no-ignore -j2 -P -c '\b(\w+) \1\b' tree | sort | sum
    kp "$p" --no-ignore --sort path -i -t txt -l 'kernel probe' tree | sum
    kp "$p" --no-ignore -j2 -c -F -e alpha -e omega -e 'the function' tree | sort | sum
    kp "$p" --no-ignore -j2 -v -c '[aeiou]{2}' -g '*1?.log' tree | sort | sum
    kp "$p" --no-ignore -j2 --files tree | wc -l
}

gen_fd() { gen_tree; }
wl_fd() {
    p=$(bin /usr/lib/cargo/bin/fd)
    ln -s "$IN/tree" tree
    for a in '-e log .' '-t d e[0-5]' 'file1[0-9]+\.txt$' '-e txt --size +4k .' '-g *4?.log' '-t f -p d[1-3]/e[2-4]/file[0-9]*7' \
        '-E *.log ^file[0-9]{2}[05]'; do
        # shellcheck disable=SC2086
        kp "$p" -I -j2 $a tree/ | sort | sum
    done
    kp "$p" -I -j2 -e txt '^file4' tree/ -x wc -c | sort | sum
}

# ---- Go -------------------------------------------------------------------------------------

# fzf's non-interactive mode: fuzzy, exact, inverse and anchored matches of
# 300,000 lines, scored and sorted on goroutines over chunks of the input
# (their order, ties broken by length and index, is fzf's, not the threads')
gen_fzf() { gen_text; }
wl_fzf() {
    p=$(bin /usr/bin/fzf)
    kp "$p" --filter 'kprb' <"$IN/text" | sum
    kp "$p" --filter "'kernel probe" --no-sort <"$IN/text" | wc -l
    kp "$p" -e --filter 'error warning' --tiebreak=length,index <"$IN/text" | sum
    kp "$p" --filter 'exmpl org' -i --nth 2.. <"$IN/text" | sum
    kp "$p" --filter '^alpha | ^omega !beta' <"$IN/text" | sum
}

# gofmt, a static Go executable (no cgo, no dynamic loader: the static
# runtime in its pool, doc/runtime.md): Go's own go/... packages as Debian
# ships them (golang-1.19-src, which golang-go depends on), every fourth
# file unindented and its " = " spread for gofmt to mend; the parse errors
# of their testdata on standard error. gofmt formats files on goroutines
# and prints in the files' order
gen_gofmt() {
    [ -d "$IN/gotree" ] && return
    g=$(readlink -f /usr/bin/gofmt)
    rm -rf "$IN/gotree.new"
    cp -R "${g%/bin/gofmt}/src/go" "$IN/gotree.new" || return
    (cd "$IN/gotree.new" && find . -type f -name '*.go' | sort | awk 'NR % 4 == 0' | while read -r f; do
        awk '{ sub(/^\t+/, ""); gsub(/ = /, "  =  "); print }' "$f" >"$f.u" && mv "$f.u" "$f"
    done) && mv "$IN/gotree.new" "$IN/gotree"
}
wl_gofmt() {
    p=$(bin /usr/bin/gofmt)
    cp -R "$IN/gotree" tree
    kperr e "$p" -l tree >l; echo "list: $(wc -l <l) $(sum l), errors: $(wc -l <e) $(sum e)"
    kp "$p" -d tree | sum
    kp "$p" -s -d tree/types tree/build | sum
    kp "$p" -r 'len(a) == 0 -> a == nil' -d tree/printer tree/ast tree/parser | sum
    kperr e "$p" -e -l tree/types/testdata >/dev/null; echo "all errors: $(wc -l <e) $(sum e)"
    kp "$p" <tree/printer/nodes.go | sum   # (one of the files unindented)
    # -w rewrites files in place (through a backup file it removes), -l then lists none
    s="tree/ast tree/printer tree/parser tree/scanner tree/token tree/format"
    # shellcheck disable=SC2086
    kp "$p" -w $s
    # shellcheck disable=SC2086
    kp "$p" -l $s | wc -l
    find tree -type f -name '*.go' | sort | xargs sha256sum | sum
}

# ---- an SQL shell ---------------------------------------------------------------------------

gen_sqlite() { :; }
wl_sqlite() {
    kperr e "$(bin /usr/bin/sqlite3)" q.db <"$DATA/queries.sql"
    echo "exit $?"; cat e
}

# ---- regular expressions: grep -P, sed, gawk -----------------------------------------------

gen_grep() { gen_text; }
wl_grep() {
    p=$(bin /usr/bin/grep)
    kp "$p" -P -c '\b(\w+)@\1\.example\.org' "$IN/text"
    kp "$p" -P -o '(?<=@)[a-z]+(?=\.example)' "$IN/text" | sort | uniq -c | sort -rn | head -3
    kp "$p" -E -n 'error.*(warning|debug) [0-9]{4,}' "$IN/text" | sum
    kp "$p" -i -w -c 'KERNEL PROBE' "$IN/text"
    kp "$p" -v -c -e alpha -e omega "$IN/text"
    kp "$p" -P -c '^(?:(?!beta).)*\d{4}-0[1-6]-\d\d(?:(?!beta).)*$' "$IN/text"
}

gen_sed() { gen_text; }
wl_sed() {
    p=$(bin /usr/bin/sed)
    head -n 120000 "$IN/text" | kp "$p" -E 's/([a-z]+)@([a-z]+)\.example\.org/<\2 at \1>/g; /^error/d; s/0x([0-9a-f]+)/[\1]/2; y/abc/ABC/' | sum
    head -n 60000 "$IN/text" | kp "$p" -n '/kernel/{ s/ \([a-z]*\) \1 / twice(\1) /p; }; $=' | sum
    head -n 60000 "$IN/text" | kp "$p" -E ':a; s/(^| )([a-z]+) ([0-9]+)( |$)/\1\3 \2\4/; ta' | sum
}

gen_gawk() { gen_text; }
wl_gawk() {
    p=$(bin /usr/bin/gawk)
    head -n 100000 "$IN/text" | kp "$p" '{ for (i = 1; i <= NF; i++) n[$i]++ }
        END { PROCINFO["sorted_in"] = "@val_num_desc"; k = 0
              for (w in n) { if (++k > 8) break; print w, n[w] } }'
    head -n 80000 "$IN/text" | kp "$p" '
        match($0, /([0-9]{4})-([0-9]{2})-[0-9]{2}/, m) { y[m[1]]++ ; s += m[2] }
        { t = gensub(/([a-z]+)@([a-z]+)/, "\\2.\\1", "g"); c += gsub(/0x[0-9a-f]+/, "H", t); l += length(t) }
        END { PROCINFO["sorted_in"] = "@ind_str_asc"; for (k in y) printf "%s:%d ", k, y[k]; print ""; print s, c, l }'
    kp "$p" -M 'BEGIN { x = 3 ^ 2000; print length(x), substr(x, 1, 30), x % 1000007 }'
}

# ---- a static executable: busybox (the static runtime, no dynamic loader) ------------------

# its applets as one program (busybox APPLET ...), and its shell, which runs
# the applets it forks as itself (/proc/self/exe): every process probed
gen_busybox() { gen_text; }
wl_busybox() {
    b=$(bin /bin/busybox)
    head -n 50000 "$IN/text" | kp "$b" sort | kp "$b" uniq -c | kp "$b" sort -rn >u && kp "$b" head -n 5 u
    head -n 80000 "$IN/text" | kp "$b" awk '{ for (i = 1; i <= NF; i++) n[length($i)]++ } END { for (k = 1; k <= 12; k++) printf "%d:%d ", k, n[k]; print "" }'
    head -n 60000 "$IN/text" | kp "$b" sed -E 's/([a-z]+)@([a-z]+)/\2.\1/g; /error/d' | kp "$b" md5sum
    kp "$b" grep -c -E '[0-9]{4}-0[1-6]' "$IN/text"
    head -c 2000000 "$IN/text" | kp "$b" gzip -6 | kp "$b" gunzip | kp "$b" sha256sum
    kp "$b" cut -d' ' -f2,4 "$IN/text" | kp "$b" tr a-z A-Z | kp "$b" tail -n 3
    kp "$b" sh -c 'i=0; while [ $i -lt 200 ]; do i=$((i + 1)); echo "$i $((i * i % 97))"; done | wc -l;
                   trap "echo trapped" USR1; kill -USR1 $$; (exit 3); echo "sub $?"
                   printf "%s\n" c a b | sort | tr "\n" " "; echo'
    mkdir d && kp "$b" cp "$IN/text" d/t && kp "$b" tar -cf d.tar d && kp "$b" tar -tvf d.tar | awk '{ print $3, $6 }'
}

# ---- video: ffmpeg encoding with libx264, hand-written assembly without symbols or CFI ---

# (the input is ffmpeg's own test pattern, made by lavfi as it encodes; two
# encodings by one command and two decodings by another, as each command's
# start-up is most of its time)
gen_ffmpeg() { :; }
wl_ffmpeg() {
    p=$(bin /usr/bin/ffmpeg)
    q="-nostdin -v error"
    bx="-fflags +bitexact -flags:v +bitexact"
    kp "$p" $q -f lavfi -i testsrc=size=320x240:rate=25:duration=2 \
        -map 0 -c:v libx264 -preset medium -threads 2 $bx -f h264 a.h264 \
        -map 0 -pix_fmt yuv420p10le -c:v libx264 -preset fast -crf 30 -threads 2 $bx -f h264 b.h264
    sum a.h264; sum b.h264
    kp "$p" $q $bx -i a.h264 $bx -i b.h264 -map 0 $bx -f framemd5 a.md5 -map 1 $bx -f framemd5 b.md5
    grep -v '^#' a.md5 | sum; grep -v '^#' b.md5 | sum
}

# ---- a crypto library: openssl ----------------------------------------------------------

gen_openssl() { gen_text; [ -s "$IN/text6" ] || head -c 6000000 "$IN/text" >"$IN/text6"; }
wl_openssl() {
    p=$(bin /usr/bin/openssl)
    k=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
    iv=0f0e0d0c0b0a09080706050403020100
    kp "$p" enc -aes-256-cbc -K $k -iv $iv -in "$IN/text6" | sum
    kp "$p" enc -chacha20 -K $k -iv $iv -in "$IN/text6" | sum
    kp "$p" enc -aes-128-ctr -K ${k%????????????????????????????????} -iv $iv -in "$IN/text6" -out c.bin
    kp "$p" enc -d -aes-128-ctr -K ${k%????????????????????????????????} -iv $iv -in c.bin | sum
    for h in sha256 sha512 sha3-256 blake2b512 sm3 md5; do
        kp "$p" dgst -$h -r "$IN/text6" | cut -c1-24
    done
    head -c 100000 "$IN/text" | kp "$p" base64 | sum
    head -c 4096 "$IN/text" >m
    kp "$p" dgst -sha256 -sign "$DATA/test-rsa.pem" -out rsa.sig m; sum rsa.sig
    kp "$p" pkey -in "$DATA/test-rsa.pem" -pubout -out rsa.pub
    kp "$p" dgst -sha256 -verify rsa.pub -signature rsa.sig m
    kp "$p" pkeyutl -sign -rawin -inkey "$DATA/test-ed25519.pem" -in m -out ed.sig; sum ed.sig
    kp "$p" prime 170141183460469231731687303715884105727
    kp "$p" kdf -keylen 32 -kdfopt digest:SHA256 -kdfopt pass:secret -kdfopt salt:salt -kdfopt iter:20000 PBKDF2
}
