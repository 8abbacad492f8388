# Annotates gdb's output for a core (info proc mappings, then registers, x/i
# and bt): each address in a mapped file gets "[FILE+0xVADDR]", the link-time
# address in that file (a PIE or library: the offset from its lowest mapping;
# an executable mapped below 16 MiB, not PIE: the address itself), which is
# what kprewrite's reports and fde@0xADDR names use.
function hex(s,   n, i) {
    s = tolower(s); sub(/^0x/, "", s); n = 0
    for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    return n
}
function tohex(n,   s) {
    s = ""
    do { s = substr("0123456789abcdef", n % 16 + 1, 1) s; n = (n - n % 16) / 16 } while (n > 0)
    return "0x" s
}
function where(a,   i, f, v) {
    for (i = 1; i <= nm; i++)
        if (a >= ms[i] && a < me[i]) {
            f = mf[i]; v = base[f] < 16777216 ? a : a - base[f]
            sub(/.*\//, "", f)
            return "  [" f "+" tohex(v) "]"
        }
    return ""
}
$1 ~ /^0x[0-9a-f]+$/ && $2 ~ /^0x[0-9a-f]+$/ && $4 ~ /^0x[0-9a-f]+$/ && NF >= 5 && $NF ~ /^\// {
    nm++; ms[nm] = hex($1); me[nm] = hex($2); mf[nm] = $NF
    if (!($NF in base) || ms[nm] < base[$NF]) base[$NF] = ms[nm]
    next   # (the mappings themselves are not printed again)
}
/^#[0-9]+ +0x[0-9a-f]+ in / { print $0 where(hex($2)); next }
/^#0 +[^0]/ || /^#[0-9]+ +[a-zA-Z_]/ { print; next }
/^rip +0x/ { print $0 where(hex($2)); next }
/^=> 0x/ { a = $2; sub(/:$/, "", a); print $0 where(hex(a)); next }
/Start Addr +End Addr/ || /^Mapped address spaces/ { next }
{ print }
