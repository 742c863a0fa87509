#!/usr/bin/env bash
# Chapter 8's claims tables, from its summaries, never typed by hand.
#
#   bench/claims-table.sh                  print every comparison of figures/8-ablations.tsv
#   bench/claims-table.sh FILE             ... of another summary (8-ablations --summary FILE)
#   bench/claims-table.sh --verdicts       print the article's claims, a row each, with their
#                                          verdicts in figures/8-ablations-k9.tsv (seeds 0-8)
#                                          and figures/8-ablations-100-k9.tsv (seeds 100-108)
#   bench/claims-table.sh [FILE] --update  put the first between the claims markers of
#                                          chapters/8-ablations/README.md, the second between
#                                          README.md's verdicts markers
# FILE is taken from the folder the script is called from; the READMEs and the summaries are
# those of the repository the script is in. A summary with a field that is not what 8-ablations
# writes is refused: one line naming the file, its line and the field, exit 1, the READMEs
# untouched. Tests check that both READMEs' tables are this script's output.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/readme-block.sh
. "$here/readme-block.sh"

verdicts=0 args=()
for a in "$@"; do
    if [ "$a" = --verdicts ]; then verdicts=1; else args+=("$a"); fi
done
readme_script_args "$0" summaries ${args[@]+"${args[@]}"}
# FILE from the caller's folder, the default from the repository: messages name the path tried.
case $input in
"") input=$root/figures/8-ablations.tsv ;;
/*) ;;
*) input=$PWD/$input ;;
esac
readme_input_check claims-table.sh "$input" "a file: run make ablations"

# The fields as 8-ablations writes them (chapters/8-ablations/machinery/tsv.cpp): diff, ci_low and
# ci_high with two decimals, or inf where the seeds are too few for an interval (nan: no valid
# seed); seeds and valid counts; threshold a side (<, > or ±) and a number; verdict one of four
# words; test, family one of theirs; p and p_adj four decimals in 0..1, or - for none.
comparisons() {
    CLAIMS_INPUT=$1 awk -F'\t' "$readme_awk_visible"'
    BEGIN {
        file = visible(ENVIRON["CLAIMS_INPUT"])
        split("claim section metric baseline variant diff ci_low ci_high seeds threshold" \
              " verdict valid test family p p_adj", name, " ")
        header = name[1]; shown = name[1]
        for (i = 2; i <= 16; i++) { header = header "\t" name[i]; shown = shown ", " name[i] }
    }
    function refuse(what) {
        printf "claims-table.sh: %s line %d: %s\n", file, NR, visible(what) > "/dev/stderr"
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
    }' "$1"
}

# The article's claims, one row per primary comparison, in the order of the two K = 9 summaries
# (checked as comparisons() checks any), each with its words from the article and its verdict in
# either block; an undecided one says why.
verdicts() {
    local k9=$root/figures/8-ablations-k9.tsv k9b=$root/figures/8-ablations-100-k9.tsv
    comparisons "$k9" >/dev/null && comparisons "$k9b" >/dev/null || return 1
    awk -F'\t' -v first="$k9" "$readme_awk_visible"'
        BEGIN {
            says["base:exact"] = "attention alone \"번역 성능에서 기존 모델을 앞질렀고\""
            says["base:seconds_to_level"] = "\"학습 시간은 오히려 크게 줄었습니다\""
            says["unscaled-256:exact"] = "\"이 나눗셈을 빼면 모델이 학습을 거의 하지 못합니다\""
            says["heads-1:exact"] = "heads: \"같은 용량을 여러 관점으로 나눠 쓰는 장치\""
            says["base:exact_pruned_third"] = \
                "\"상당수 헤드는 제거해도 성능이 크게 떨어지지 않는다\""
            says["pos-learned:exact"] = "learned positions: \"성능이 거의 같았고\""
            says["pos2-sin:exact_long_source"] = "sinusoids extend \"학습 없이 임의의 길이로\""
            says["nopos:exact"] = "without positions, \"순서 없는 집합\""
            says["nowarm-post:exact"] = "\"원 논문이 학습률 워밍업을 필수로 둔 이유\" (Post-LN)"
            says["noresid-post:exact"] = "residual connections carry the gradient \"깊은 층까지\""
        }
        function verdict(v, p_adj, valid) {
            if (v != "undecided") { gsub("_", " ", v); return v }
            return p_adj == "-" ? "undecided (" valid " valid seeds)" \
                                : "undecided (Holm'\''s p = " p_adj ")"
        }
        FNR == 1 || $14 != "primary" { next }
        FILENAME == first {
            if (!($5 in says)) {
                printf "claims-table.sh: %s line %d: no words for the primary comparison %s\n",
                    visible(FILENAME), FNR, visible($5) > "/dev/stderr"
                failed = 1
                exit 1
            }
            order[++n] = $5; section[$5] = $2; claim[$5] = $1; k = $9
            one[$5] = verdict($11, $16, $12)
            next
        }
        { two[$5] = verdict($11, $16, $12); k2 = $9 }
        END {
            if (failed) exit 1
            printf "| § | the article says | seeds 0-%d | seeds 100-%d | figure |\n", k - 1, 99 + k2
            print "| --- | --- | --- | --- | --- |"
            for (i = 1; i <= n; i++)
                printf "| %s | %s | %s | %s | `figures/8-%s.png` |\n", section[order[i]],
                    says[order[i]], one[order[i]], order[i] in two ? two[order[i]] : "-",
                    claim[order[i]]
        }' "$k9" "$k9b"
}

if [ "$verdicts" = 1 ]; then
    verdicts
    exit
fi
table=$(comparisons "$input")
if [ "$update" = 1 ]; then
    short=$(verdicts)
    readme_block_replace claims-table.sh "$root/chapters/8-ablations/README.md" claims "$table" ||
        exit 1
    readme_block_replace claims-table.sh "$root/README.md" verdicts "$short" || exit 1
fi
printf '%s\n' "$table"
