# perl workload: die/eval (perl unwinds with its JMPENV longjmp), die with
# objects, local, regexes with captures and substitutions, sort with a
# comparator, sprintf, hashes (printed sorted). Deterministic.
use strict; use warnings;
my $s = 42;
sub lcg { $s = ($s * 16807) % 2147483647; return $s }

package Bad { sub new { my ($c, $n) = @_; bless { code => $n }, $c } sub code { $_[0]{code} } }
sub risky {
    my ($i, $d) = @_;
    return risky($i, $d - 1) + 1 if $d;
    die "bad $i\n" if $i % 3 == 0;
    die Bad->new($i) if $i % 5 == 0;
    if ($i % 7 == 0) { my $z = 0; return $i / $z }   # a runtime error
    return $i;
}
my ($sum, $caught, $codes, $divs) = (0, 0, 0, 0);
for my $i (1 .. 60000) {
    my $r = eval { risky($i, $i % 6) };
    if (!defined $r) {
        if (ref $@) { $codes += $@->code }
        elsif ($@ =~ /^Illegal division/) { $divs++ }
        else { $caught++ }
    } else { $sum += $r }
}
print "eval $sum $caught $codes $divs\n";
my $nested = 0;
for my $i (1 .. 5000) {
    eval { eval { die "inner\n" }; $nested++ if $@ eq "inner\n"; local $@; die "outer\n" };
    $nested++ if $@ eq "outer\n";
}
print "nested $nested\n";

my @words = map { sprintf "%s%d-%s", (qw(alpha beta gamma delta))[lcg() % 4], lcg() % 100000, join "", map { chr(97 + lcg() % 26) } 1 .. 1 + lcg() % 6 } 1 .. 60000;
my @sorted = sort { substr($b, -3) cmp substr($a, -3) or $a cmp $b } @words;
my %count; my $caps = 0;
for (@words) {
    if (/^(alpha|beta|gamma|delta)(\d+)-(\w+)$/) { $count{$1}++; $caps += length($3) + $2 % 7 }
}
my $text = join " ", @sorted[0 .. 9999];
(my $swapped = $text) =~ s/(\d)(\d)/$2$1/g;
my $n = () = $text =~ /\b(?:al|ga)\w+?\d{3,}/g;
print "re $sorted[0] $sorted[-1] $caps $n ", join(",", map { "$_=$count{$_}" } sort keys %count), " ", substr($swapped, 0, 60), "\n";
my %h; $h{$_ % 7919} += $_ for 1 .. 200000;
my $acc = 0; $acc = ($acc * 31 + $h{$_}) % 1000000007 for sort { $a <=> $b } keys %h;
print "hash $acc\n";
printf "fmt %.6f %e %x %s\n", 3.14159265358979 * 1000, 1 / 7, 3735928559, scalar reverse "abcdef";
