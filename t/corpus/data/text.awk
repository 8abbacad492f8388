# deterministic text for the corpus workloads (t/corpus/workloads.sh):
# LINES lines, SEED seed (Park-Miller, exact in doubles)
function rnd(n) { s = (s * 16807) % 2147483647; return s % n }
BEGIN {
    s = SEED + 0; if (s <= 0) s = 1
    nw = split("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega the of and to in is was for on that with as by at from error warning info debug request response server client kernel probe return value function", W, " ")
    for (i = 1; i <= LINES; i++) {
        k = 4 + rnd(12); line = ""
        for (j = 0; j < k; j++) {
            r = rnd(20)
            if (r == 0) w = rnd(100000)
            else if (r == 1) w = W[1 + rnd(nw)] "@" W[1 + rnd(nw)] ".example.org"
            else if (r == 2) w = sprintf("%04d-%02d-%02d", 1990 + rnd(35), 1 + rnd(12), 1 + rnd(28))
            else if (r == 3) w = sprintf("0x%x", rnd(1048576))
            else w = W[1 + rnd(nw)]
            line = line (j ? " " : "") w
        }
        print line
    }
}
