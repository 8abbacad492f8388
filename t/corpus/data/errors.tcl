# tclsh8.6 workload (the code is libtcl8.6): catch/error/try/throw,
# coroutines (NRE), string map, regexp/regsub, lsort with -command, dicts.
# Deterministic.
set s 42
proc lcg {} { global s; set s [expr {($s * 16807) % 2147483647}] }
proc risky {i d} {
    if {$d > 0} { return [expr {[risky $i [expr {$d - 1}]] + 1}] }
    if {$i % 3 == 0} { error "bad $i" }
    if {$i % 5 == 0} { throw [list BAD $i] "code $i" }
    if {$i % 7 == 0} { return [expr {$i / 0}] }
    return $i
}
set sum 0; set caught 0; set codes 0; set divs 0
for {set i 1} {$i <= 30000} {incr i} {
    try {
        incr sum [risky $i [expr {$i % 6}]]
    } trap {BAD} {msg opts} {
        incr codes [lindex [dict get $opts -errorcode] 1]
    } trap {ARITH DIVZERO} {} {
        incr divs
    } on error {msg} {
        incr caught
    }
}
puts "try $sum $caught $codes $divs"
set c 0
for {set i 0} {$i < 5000} {incr i} { if {[catch {catch {error x} m; error "$m$i"} m2]} { incr c [string length $m2] } }
puts "catch $c"
proc gen {n} { yield; for {set i 0} {$i < $n} {incr i} { yield [expr {$i * $i}] }; return -1 }
set total 0
for {set k 0} {$k < 200} {incr k} {
    coroutine g$k gen 50
    while {[set v [g$k]] >= 0} { incr total $v }
}
puts "coroutines $total"
set words {}
for {set i 0} {$i < 30000} {incr i} { lappend words [format "%s%d-%s" [lindex {alpha beta gamma delta} [expr {[lcg] % 4}]] [expr {[lcg] % 100000}] [string repeat [format %c [expr {97 + [lcg] % 26}]] [expr {1 + [lcg] % 5}]]] }
proc cmp {a b} { set r [string compare [string range $b end-2 end] [string range $a end-2 end]]; if {$r == 0} { set r [string compare $a $b] }; return $r }
set sorted [lsort -command cmp $words]
set text [join [lrange $sorted 0 4999] " "]
set n [regexp -all {\m(?:al|ga)\w+?\d{3,}} $text]
regsub -all {(\d)(\d)} $text {\2\1} swapped
set d [dict create]
foreach w $words { regexp {^([a-z]+)(\d+)} $w -> k num; dict incr d $k; }
puts "strings [lindex $sorted 0] [lindex $sorted end] $n [string range $swapped 0 59] [lsort -stride 2 $d] [string map {alpha A beta B} [lrange $words 0 3]]"
