#!/usr/bin/perl
# The emulator's registration of __launch_bounds__ (cuda/emu/emu.mk, cuda/cuda.mk): copies a
# CUDA source to stdout with CHECK_LAUNCH_BOUNDS(args); inserted as the first statement of every
# function declared __launch_bounds__(args), in any of its valid spellings (before or after
# __global__, before or after the return type), so that each launch checks its block size
# without a hand-written call. Line comments are dropped first (a comment may name
# __launch_bounds__); the line count is kept, and a #line directive keeps the file's name.
use strict;
use warnings;
my $path = $ARGV[0];
open(my $in, '<', $path) or die "launch_bounds.pl: cannot read $path: $!\n";
local $/;
my $text = <$in>;
$text =~ s{("(?:[^"\\\n]|\\.)*")|//[^\n]*}{defined $1 ? $1 : ""}ge;
my $balanced = qr/(\((?:[^()]++|(?-1))*\))/;
$text =~ s!(__launch_bounds__\s*$balanced[^\{;]*?\{)!$1 CHECK_LAUNCH_BOUNDS$2;!g;
print "#line 1 \"$path\"\n$text";
