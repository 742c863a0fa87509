#!/usr/bin/perl
# The emulator's registration of __launch_bounds__ (cuda/cuda.mk): reads a CUDA source AFTER the
# preprocessor (g++ -E -DEMU_LAUNCH_BOUNDS_PASS, where cuda/emu/emulator.h makes every
# __launch_bounds__(args) the marker __emu_launch_bounds__(args)) and writes it with each marker
# removed and ::emu::check_launch_bounds(args); inserted as the first statement of the function
# it declares, so that each launch checks its block size without a hand-written call.
#   - The preprocessor has already expanded every macro (a `#define` that expands to
#     __launch_bounds__, used any number of times, or a parameterised one) and dropped the
#     comments; what is left that is not code is a literal, which this script skips whole
#     (strings, raw strings, characters; numbers for their digit separators), so a literal
#     that contains "__launch_bounds__(64) {" stays as it is.
#   - The function's body is the first `{` after the marker outside parentheses and brackets.
#     A declaration without a body (a `;` first) names the function; its definitions later in
#     the unit get the check.
#   - Insertions stay on their lines, so the preprocessor's line markers keep every diagnostic
#     and line table right.
# Usage: launch_bounds.pl [FILE.ii] > OUT.ii (stdin without FILE). Exit 1 on a marker whose
# declaration it cannot follow, naming it.
use strict;
use warnings;

my $path = $ARGV[0] // '-';
my $in;
if ($path eq '-') {
    $in = \*STDIN;
} else {
    open($in, '<', $path) or die "launch_bounds.pl: cannot read $path: $!\n";
}
my $text = do { local $/; <$in> };
# Most units declare no bounds: nothing to scan.
if (index($text, '__emu_launch_bounds__') < 0) { print $text; exit 0 }

my $balanced = qr/(\((?:[^()"']++|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|(?-1))*\))/;
# One token a scan must step over whole: a literal, a number, an identifier.
my $literal = qr{
    (?<![\w])(?:u8|[uUL])?R"(?<rawd>[^()\\\s"]{0,16})\((?s:.*?)\)\k<rawd>"   # raw string
  | (?<![\w])(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*"                     # string
  | (?<![\w])(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*'                     # character
  | (?<![\w.])\.?\d(?:[eEpP][+-]|['\w.])*                         # number (1'000'000)
}x;

sub line_of { my ($pos) = @_; return 1 + (substr($text, 0, $pos) =~ tr/\n//) }
sub fail {
    my ($pos, $why) = @_;
    die "launch_bounds.pl: $path (preprocessed line " . line_of($pos) . "): $why\n";
}

# The markers outside literals: [start, end, args].
my @markers;
while ($text =~ m{$literal|(?<mark>__emu_launch_bounds__)}g) {
    next unless defined $+{mark};
    my $start = $-[0];
    pos($text) = $+[0];
    $text =~ m{\G\s*$balanced}gc or fail($start, "__launch_bounds__ without its arguments");
    my $args = substr($1, 1, -1);
    push @markers, [$start, pos($text), $args];
}

# From a position on: the first `{` or `;` outside parentheses, brackets and literals, and the
# name before the first `(` there (a declaration's function name).
my %skip_call = map { $_ => 1 } qw(__attribute__ __declspec alignas decltype noexcept
                                   __emu_launch_bounds__ requires sizeof alignof);
sub find_body {
    my ($from) = @_;
    pos($text) = $from;
    my ($depth, $name, $last_id) = (0, undef, undef);
    while ($text =~ m~\G(?:$literal|(?<id>[A-Za-z_]\w*)|(?<open>[(\[])|(?<close>[)\]])
                          |(?<end>[{;])|\s+|[^\w"'(){}\[\];\s]+)~gcx) {
        my ($id, $open, $close, $end) = @+{qw(id open close end)};
        if (defined $id) { $last_id = $id if $depth == 0; next }
        if (defined $open) {
            $name //= $last_id if $depth == 0 && $open eq '(' && defined $last_id
                                  && !$skip_call{$last_id};
            $depth++;
            next;
        }
        if (defined $close) { $depth--; next }
        if (defined $end) {
            next if $depth > 0;
            return ($end, pos($text), $name);
        }
    }
    return (undef, pos($text) // $from, $name);
}

# Edits, applied from the end: [position, length to remove, text to insert].
my @edits;
my %declared;  # a declaration without a body: name -> args
my %done;      # body positions already given a check
for my $m (@markers) {
    my ($start, $end, $args) = @$m;
    push @edits, [$start, $end - $start, ''];
    my ($what, $at, $name) = find_body($end);
    fail($start, "no function body or `;` after __launch_bounds__($args)") unless defined $what;
    if ($what eq '{') {
        push @edits, [$at, 0, " ::emu::check_launch_bounds($args);"];
        $done{$at} = 1;
    } else {
        fail($start, "a declaration with __launch_bounds__($args) whose function has no name")
            unless defined $name;
        $declared{$name} = [$args, $at];
    }
}
# The definitions of functions declared with bounds: NAME (params) [specifiers] { after it.
for my $name (sort keys %declared) {
    my ($args, $from) = @{$declared{$name}};
    pos($text) = $from;
    while ($text =~ m{$literal|(?<![\w.>])(?<fn>\Q$name\E)(?![\w])}g) {
        next unless defined $+{fn};
        my $after = $+[0];
        pos($text) = $after;
        if ($text =~ m~\G\s*(?:<[^;{}()]*>\s*)?$balanced[^;{}()=]*\{~gc) {
            my $at = $+[0];
            next if $done{$at}++;
            push @edits, [$at, 0, " ::emu::check_launch_bounds($args);"];
        } else {
            pos($text) = $after;
        }
    }
}
for my $e (sort { $b->[0] <=> $a->[0] } @edits) {
    substr($text, $e->[0], $e->[1]) = $e->[2];
}
print $text;
