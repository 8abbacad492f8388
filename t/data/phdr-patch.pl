#!/usr/bin/perl
# phdr-patch.pl IN OUT KIND:N FIELD=VALUE...: a copy of the ELF file IN with
# fields of one program header set, for crafted-input tests (t/bad-input.t)
# and fuzz seeds (fuzz/run.sh). KIND:N is the Nth (from 0) header of that
# type (load, dynamic, interp, note, phdr) or any:N; FIELD is p_type,
# p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz or p_align;
# VALUE is decimal or 0x hex, up to 2^64 - 1. Exit 1 when there is no such
# header.
use strict;
use warnings;
no warnings 'portable';
my ($in, $out, $which, @sets) = @ARGV;
die "usage: phdr-patch.pl IN OUT KIND:N FIELD=VALUE...\n" unless defined $which && @sets;
my %types = (load => 1, dynamic => 2, interp => 3, note => 4, phdr => 6);
my %fields = (p_type => [0, 'L<'], p_flags => [4, 'L<'], p_offset => [8, 'Q<'], p_vaddr => [16, 'Q<'],
              p_paddr => [24, 'Q<'], p_filesz => [32, 'Q<'], p_memsz => [40, 'Q<'], p_align => [48, 'Q<']);
my ($kind, $nth) = $which =~ /^(\w+):(\d+)$/ or die "phdr-patch.pl: bad header '$which'\n";
die "phdr-patch.pl: unknown kind '$kind'\n" unless $kind eq 'any' || exists $types{$kind};
open my $f, '<:raw', $in or die "phdr-patch.pl: $in: $!\n";
my $b = do { local $/; <$f> };
close $f;
my $phoff = unpack('Q<', substr($b, 32, 8));
my ($phentsize, $phnum) = unpack('S<S<', substr($b, 54, 4));
my $at;
for my $i (0 .. $phnum - 1) {
    my $h = $phoff + $i * $phentsize;
    next unless $kind eq 'any' || unpack('L<', substr($b, $h, 4)) == $types{$kind};
    if ($nth-- == 0) { $at = $h; last; }
}
die "phdr-patch.pl: $in has no program header $which\n" unless defined $at;
for my $s (@sets) {
    my ($name, $v) = $s =~ /^(\w+)=(\S+)$/ or die "phdr-patch.pl: bad setting '$s'\n";
    my $fd = $fields{$name} or die "phdr-patch.pl: unknown field '$name'\n";
    $v = $v =~ /^0x/i ? hex($v) : $v;
    substr($b, $at + $fd->[0], $fd->[1] eq 'L<' ? 4 : 8) = pack($fd->[1], $v);
}
open my $o, '>:raw', $out or die "phdr-patch.pl: $out: $!\n";
print $o $b;
close $o or die "phdr-patch.pl: $out: $!\n";
