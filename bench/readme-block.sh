# shellcheck shell=bash
# The README's generated blocks, for bench/claims-table.sh and bench/readme-numbers.sh (sourced).
#
#   readme_block_replace PROGRAM README NAME TEXT
#
# puts TEXT, as it is (no escape processing: a `\t` or `\n` in it stays two characters), between
# README's line that starts `<!-- NAME:begin` and its line that starts `<!-- NAME:end`, both kept,
# in place of the lines between them. README must have exactly one of each, the begin first;
# otherwise the function says so in one line naming PROGRAM and README, and returns 1.
# The result is written to a temporary file beside README (a symbolic link's target), checked
# (one marker of each, begin first, every line outside the block kept) and only then moved over
# README; on any failure, or a Ctrl-C on the way, the temporary file is removed and README is as
# it was. The function sets the EXIT, INT and TERM traps while it writes, and clears them after.

# Both scripts' arguments, [--update] [FILE]: sets `update` (0 or 1) and `input` (FILE or "").
# SCRIPT is the caller's $0 (its header, lines 2-15, is its --help), NOUN what FILE is.
#
#   readme_script_args SCRIPT NOUN "$@"
readme_script_args() {
    local script=$1 noun=$2 a program
    program=$(basename "$script")
    shift 2
    update=0 input=""
    for a in "$@"; do
        case "$a" in
        --update) update=1 ;;
        -h | --help) sed -n '2,15p' "$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "$program: unknown option ${a@Q} (see --help)" >&2; exit 2 ;;
        *)
            if [ -n "$input" ]; then
                echo "$program: two $noun named (${input@Q}, ${a@Q}); name one FILE" >&2
                exit 2
            fi
            input=$a ;;
        esac
    done
}

# Exits 1 with one line naming FILE unless it is a readable regular file (symlinks followed; not
# a FIFO or a device) of at most 1 MiB: a summary is about 2 KB, a bench run about 5 KB.
#
#   readme_input_check PROGRAM FILE HINT
readme_input_check() {
    local program=$1 file=$2 hint=$3 size
    if [ ! -f "$file" ] || [ ! -r "$file" ]; then
        echo "$program: cannot read $file ($hint)" >&2
        exit 1
    fi
    size=$(stat -L -c %s -- "$file")
    if [ "$size" -gt 1048576 ]; then
        echo "$program: $file is $size bytes, larger than 1 MiB: no summary or bench run" \
            "is; name the file 8-ablations or make bench wrote" >&2
        exit 1
    fi
}

# For the scripts' awk programs (awk "$readme_awk_visible"'...'): visible(s) is s with its
# control characters shown as \r, \t or \xNN, as a refusal quotes a field: a CR from a CRLF file
# would send the terminal's cursor back over the message, an escape would reach the terminal.
# shellcheck disable=SC2016
readme_awk_visible='
function visible(s,   out, c, controls, i) {
    for (i = 1; i < 32; i++) controls = controls sprintf("%c", i)
    while (match(s, /[\001-\037\177]/)) {
        c = substr(s, RSTART, 1)
        out = out substr(s, 1, RSTART - 1) (c == "\r" ? "\\r" : c == "\t" ? "\\t" : \
              sprintf("\\x%02x", c == "\177" ? 127 : index(controls, c)))
        s = substr(s, RSTART + 1)
    }
    return out s
}'

# The README's markers: "BEGINS ENDS FIRST_BEGIN_LINE FIRST_END_LINE LINES" of FILE for NAME.
readme_block_markers() {
    README_BLOCK_NAME=$2 awk '
        BEGIN { b = "<!-- " ENVIRON["README_BLOCK_NAME"] ":begin"
                e = "<!-- " ENVIRON["README_BLOCK_NAME"] ":end" }
        index($0, b) == 1 { if (!nb++) lb = NR }
        index($0, e) == 1 { if (!ne++) le = NR }
        END { printf "%d %d %d %d %d\n", nb, ne, lb, le, NR }' "$1"
}

readme_block_replace() {
    local program=$1 readme=$2 name=$3 text=$4
    local target nb ne lb le lines tnb tne tlb tle tlines want
    if [ ! -f "$readme" ] || [ ! -r "$readme" ]; then
        echo "$program: cannot read $readme (a file of the repository's checkout)" >&2
        return 1
    fi
    target=$(readlink -f -- "$readme")
    read -r nb ne lb le lines < <(readme_block_markers "$target" "$name")
    if [ "$nb" != 1 ] || [ "$ne" != 1 ]; then
        echo "$program: $readme has $nb lines starting '<!-- $name:begin' and $ne starting" \
            "'<!-- $name:end'; it needs exactly one of each, the begin first" >&2
        return 1
    fi
    if [ "$lb" -gt "$le" ]; then
        echo "$program: $readme has its '<!-- $name:end' (line $le) before its" \
            "'<!-- $name:begin' (line $lb); it needs the begin first" >&2
        return 1
    fi
    # The file that will replace README, beside it (a rename within one folder), then its mode.
    readme_block_tmp=$(mktemp "$target.XXXXXX" 2>/dev/null) || {
        echo "$program: cannot write a temporary file beside $readme" \
            "(in $(dirname -- "$target"))" >&2
        return 1
    }
    trap 'rm -f -- "$readme_block_tmp"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # TEXT comes on stdin: in the environment, Linux caps one string at 128 KiB.
    if ! awk -v lb="$lb" -v le="$le" '
            NR == lb { print; while ((getline line < "/dev/stdin") > 0) print line; next }
            NR > lb && NR < le { next }
            { print }' "$target" <<<"$text" >"$readme_block_tmp" ||
        ! chmod --reference="$target" -- "$readme_block_tmp"; then
        echo "$program: cannot write the new $readme to $readme_block_tmp; it is left as it was" >&2
        readme_block_done
        return 1
    fi
    # Whole: one marker of each, begin first, and the lines outside the block all there.
    read -r tnb tne tlb tle tlines < <(readme_block_markers "$readme_block_tmp" "$name")
    want=$((lines - (le - lb - 1) + $(printf '%s\n' "$text" | wc -l)))
    if [ "$tnb" != 1 ] || [ "$tne" != 1 ] || [ "$tlb" != "$lb" ] || [ "$tlines" != "$want" ] ||
        [ "$((tle - tlb))" != "$((want - lines + le - lb))" ]; then
        echo "$program: the new $readme would not be whole (a marker line in the text, or a" \
            "short write); it is left as it was" >&2
        readme_block_done
        return 1
    fi
    if ! mv -f -- "$readme_block_tmp" "$target"; then
        readme_block_done
        return 1
    fi
    readme_block_done
}

# Removes the temporary file (if still there) and clears the traps readme_block_replace set.
readme_block_done() {
    rm -f -- "$readme_block_tmp"
    readme_block_tmp=
    trap - EXIT INT TERM
}
