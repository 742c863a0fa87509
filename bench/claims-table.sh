#!/usr/bin/env bash
# The README's Claims table, from chapter 8's summary, never typed by hand.
#
#   bench/claims-table.sh                  print the table for figures/8-ablations.tsv
#   bench/claims-table.sh FILE             ... for another summary (8-ablations --summary FILE)
#   bench/claims-table.sh [FILE] --update  ... and put it between the README's claims markers
#
# One row per comparison: diff = variant - baseline, the mean over the seeds of the paired
# differences (percentage points) ± the half-width of its 95% Student's t interval, then the
# interval itself, the seeds, the threshold and the verdict. A test checks that the README's
# table is this script's output for figures/8-ablations.tsv.
# FILE is taken from the folder the script is called from; the README and the default summary
# are those of the repository the script is in.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/readme-block.sh
. "$here/readme-block.sh"

update=0 input=""
for a in "$@"; do
    case "$a" in
    --update) update=1 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "claims-table.sh: unknown option '$a' (see --help)" >&2; exit 2 ;;
    *)
        if [ -n "$input" ]; then
            echo "claims-table.sh: two summaries named ('$input', '$a'); name one FILE" >&2
            exit 2
        fi
        input=$a ;;
    esac
done
# FILE from the caller's folder, the default from the repository: messages name the path tried.
case $input in
"") input=$root/figures/8-ablations.tsv ;;
/*) ;;
*) input=$PWD/$input ;;
esac
if [ ! -f "$input" ] || [ ! -r "$input" ]; then
    echo "claims-table.sh: cannot read $input (a file: run make ablations)" >&2
    exit 1
fi
header=$'claim\tsection\tmetric\tbaseline\tvariant\tdiff\tci_low\tci_high\tseeds\tthreshold\tverdict'
head -1 "$input" | grep -qx "$header" ||
    { echo "claims-table.sh: $input is not an 8-ablations summary (another header)" >&2; exit 1; }

table=$(awk -F'\t' '
    NR == 1 {
        printf "| § | claim | metric | baseline | variant | diff ± 95%% half-width [interval] |"
        print " seeds | threshold | verdict |"
        print "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        next
    }
    NF != 11 { printf "line %d has %d fields, not 11\n", NR, NF > "/dev/stderr"; exit 1 }
    {
        printf "| %s | %s | %s | %s | %s | %.2f ± %.2f [%s, %s] | %s | %s | %s |\n", $2, $1, $3,
               $4, $5, $6, ($8 - $7) / 2, $7, $8, $9, $10, $11
    }' "$input")

if [ "$update" = 1 ]; then
    readme_block_replace claims-table.sh "$root/README.md" claims "$table" || exit 1
fi
printf '%s\n' "$table"
