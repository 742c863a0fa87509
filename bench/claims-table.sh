#!/usr/bin/env bash
# The README's Claims table, from chapter 8's summary, never typed by hand.
#
#   bench/claims-table.sh                  print the table for figures/8-ablations.tsv
#   bench/claims-table.sh FILE             ... for another summary (8-ablations --summary FILE)
#   bench/claims-table.sh [FILE] --update  ... and put it between the README's claims markers
#
# One row per comparison: its family (primary, exploratory, identity) and test, the estimate
# (a graded one: the mean over the valid seeds of the paired differences, percentage points; a
# seed count's: a share of the seeds) and its 95% interval (clipped to the range the estimate
# can take, so not always centred on it), the valid seeds (whose baseline reached its floor)
# of all, the threshold, the test's p, Holm's adjusted p (primary comparisons) and the
# verdict. A test checks that the README's table is this script's output for
# figures/8-ablations.tsv.
# FILE is taken from the folder the script is called from; the README and the default summary
# are those of the repository the script is in. A summary with a field that is not what
# 8-ablations writes (a number, a threshold, a verdict) is refused: one line naming FILE, its
# line and the field, exit 1, the README untouched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/readme-block.sh
. "$here/readme-block.sh"

readme_script_args "$0" summaries "$@"
# FILE from the caller's folder, the default from the repository: messages name the path tried.
case $input in
"") input=$root/figures/8-ablations.tsv ;;
/*) ;;
*) input=$PWD/$input ;;
esac
readme_input_check claims-table.sh "$input" "a file: run make ablations"

# The fields as 8-ablations writes them (chapters/8-ablations/summary.cpp): diff, ci_low and
# ci_high with two decimals, or inf where the seeds are too few for an interval (nan: no valid
# seed); seeds and valid counts; threshold a side (<, > or ±) and a number; verdict one of four
# words; test, family one of theirs; p and p_adj four decimals in 0..1, or - for none.
table=$(CLAIMS_INPUT=$input awk -F'\t' '
    BEGIN {
        file = ENVIRON["CLAIMS_INPUT"]
        split("claim section metric baseline variant diff ci_low ci_high seeds threshold" \
              " verdict valid test family p p_adj", name, " ")
        header = name[1]; shown = name[1]
        for (i = 2; i <= 16; i++) { header = header "\t" name[i]; shown = shown ", " name[i] }
    }
    function refuse(what) {
        printf "claims-table.sh: %s line %d: %s\n", file, NR, what > "/dev/stderr"
        failed = 1
        exit 1
    }
    function field(i) { return "field " i " (" name[i] ") is \"" $i "\"" }
    function decimal(x) { return x ~ /^-?[0-9]+(\.[0-9]+)?$/ }
    function probability(x) { return x == "-" || (x ~ /^[0-9]\.[0-9]+$/ && x + 0 <= 1) }
    NR == 1 {
        if ($0 != header)
            refuse("not the header of an 8-ablations summary (" shown ", with tabs)")
        printf "| § | claim | family | test | metric | baseline | variant |"
        printf " diff [95%% interval] | valid / seeds | threshold | p | p_adj |"
        print " verdict |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        next
    }
    NF != 16 { refuse(NF " fields, not 16 (separated by tabs)") }
    {
        for (i = 1; i <= 16; i++) {
            if ($i == "") refuse("field " i " (" name[i] ") is empty")
            if (index($i, "|")) refuse(field(i) ": a | would split the table'\''s row")
        }
        if ($9 !~ /^[0-9]+$/) refuse(field(9) ", not a count")
        if ($12 !~ /^[0-9]+$/ || $12 + 0 > $9 + 0) refuse(field(12) ", not a count of seeds")
        if (!decimal($6) && !($6 ~ /^-?nan$/ && $12 == 0)) refuse(field(6) ", not a number")
        if (!decimal($7) && $7 != "-inf") refuse(field(7) ", not a number")
        if (!decimal($8) && $8 != "inf") refuse(field(8) ", not a number")
        if (decimal($6) && (decimal($7) && $7 + 0 > $6 + 0 || decimal($8) && $8 + 0 < $6 + 0))
            refuse("diff " $6 " is outside its interval [" $7 ", " $8 "]")
        if ($10 !~ /^(<|>|±)-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?$/)
            refuse(field(10) ", not <, > or ± and a number")
        if ($11 != "reproduced" && $11 != "not_reproduced" && $11 != "undecided" &&
            $11 != "holds_by_construction")
            refuse(field(11) ", not reproduced, not_reproduced, undecided or" \
                   " holds_by_construction")
        if ($13 !~ /^(sign-flip|binomial|fisher>=[0-9]+(\.[0-9]+)?|identity)$/)
            refuse(field(13) ", not sign-flip, binomial, fisher>=LEVEL or identity")
        if ($14 != "primary" && $14 != "exploratory" && $14 != "identity")
            refuse(field(14) ", not primary, exploratory or identity")
        if (!probability($15)) refuse(field(15) ", not a probability or -")
        if (!probability($16)) refuse(field(16) ", not a probability or -")
        diff = decimal($6) ? sprintf("%.2f", $6) : "nan"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s [%s, %s] | %s / %s | %s | %s | %s |" \
               " %s |\n", $2, $1, $14, $13, $3, $4, $5, diff, $7, $8, $12, $9, $10, $15, $16,
               $11
        rows++
    }
    END {
        if (failed) exit 1
        if (NR == 0) {
            printf "claims-table.sh: %s is empty, not an 8-ablations summary\n", file \
                > "/dev/stderr"
            exit 1
        }
        if (rows == 0) refuse("the header alone: no comparison under it")
    }' "$input")

if [ "$update" = 1 ]; then
    readme_block_replace claims-table.sh "$root/README.md" claims "$table" || exit 1
fi
printf '%s\n' "$table"
