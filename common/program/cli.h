// Command-line flags: `--name value` options with defaults, `--help` lists them.
//
//   cli::Parser cli("2-scaling", "Section 2: why divide by sqrt(d_k)");
//   int trials = 20000;           cli.option("--trials", trials, "Monte Carlo trials per d_k");
//   int repeat = 5;               cli.option("--repeat", repeat, "timed runs").range(1, 1000);
//   std::vector<int> dims = {4};  cli.option("--dims", dims, "comma-separated list of d_k");
//   std::string mask = "none";    cli.choice("--mask", mask, {"none", "causal"}, "the mask");
//   std::string deck = "deck.md"; cli.path("--deck", deck, "the deck to read");  // not ""
//   cli.figures(figure_dir, no_figures, "2-scaling.png");  // --figure-dir DIR, --no-figures
//   bool quiet = false;           cli.flag("--quiet", quiet, "print less");
//   cli.parse(argc, argv);        // exits 0 after --help, exits 2 on a bad flag or value
//   cli.check_figure_dir();       // before long work: the figure folder can be written
//
// --help shows each option with a placeholder for its value: N for an integer, X for a number,
// LIST for a comma-separated list, TEXT for text, FILE for a path, a|b for a choice; the last
// argument of option() and path() names another (I, DIR, ...).
// A bad flag or value prints one line naming it (and the fix) on stderr and exits with 2; the
// value is shown quoted, control characters escaped (quote() below), so that it can neither
// break the line nor send escape codes to the terminal.
// Values: an integer is decimal digits with an optional '-' (no spaces, no '+'); one beyond its
// range is called out of range. A number is decimal (1.5, -2e-3): no hex floats, no nan or inf.
// A value given as the next word must not start with "--": `--save --no-figures` is refused
// (the flag was forgotten); `--save=--x` names such a value on purpose. A file name may not be
// "-" (this project reads and writes no standard streams by that name; ./- is a file named -).
// --help (or -h) anywhere prints the help, even where a value was expected.
// Output: once a Parser exists, the program's exit checks that everything printed to stdout was
// written; if not (a full disk, an I/O error) it prints
// "<program>: error: cannot write output: <reason>" and the exit code is 1.
#pragma once
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace cli {

class Parser {
public:
    Parser(std::string program, std::string about);

    // An integer option; range() right after it narrows what it accepts.
    Parser& option(const std::string& name, int& value, const std::string& help,
                   const std::string& placeholder = "N");
    Parser& option(const std::string& name, long& value, const std::string& help,
                   const std::string& placeholder = "N");
    // Bounds for the integer option just added: a count that is added to or multiplied with
    // another one gets bounds that keep the arithmetic inside its type.
    //   cli.option("--repeat", repeat, "timed runs").range(1, 1'000'000);
    Parser& range(long lo, long hi);
    void option(const std::string& name, double& value, const std::string& help,
                const std::string& placeholder = "X");
    void option(const std::string& name, std::string& value, const std::string& help,
                const std::string& placeholder = "TEXT");
    void option(const std::string& name, std::vector<int>& value, const std::string& help,
                const std::string& placeholder = "LIST");
    // A file or folder name: an empty value is refused (it would mean the current folder, or
    // the root once a file name is appended).
    void path(const std::string& name, std::string& value, const std::string& help,
              const std::string& placeholder = "FILE");
    // One of a few words; anything else is refused with the list.
    void choice(const std::string& name, std::string& value, std::vector<std::string> choices,
                const std::string& help);
    // A chapter's figure options: --figure-dir DIR (not empty) and --no-figures; `file` is the
    // figure's file name, for the help text.
    void figures(std::string& dir, bool& skip, const std::string& file);
    // For a program that works long before it draws: unless --no-figures, creates the figure
    // folder and checks that a file can be written in it and that none of `files` (the figures'
    // names in it) is there as a folder, a FIFO or a device, else fails (as below) naming it.
    // Call it after parse(), before the work.
    void check_figure_dir(const std::vector<std::string>& files = {}) const;
    // A flag takes no value: present means true.
    void flag(const std::string& name, bool& value, const std::string& help);

    void parse(int argc, char** argv);
    void print_help() const;
    // Whether the command line gave `name` (after parse()).
    bool given(const std::string& name) const;
    // For checks that need more than one value: prints "<program>: error: <message>" and exits 2.
    [[noreturn]] void fail(const std::string& message) const;
    // Fails (as above) when `bytes`, what the chosen `options` make the program hold at once,
    // exceed the machine's memory: one line instead of std::bad_alloc or the OOM killer.
    void require_memory(double bytes, const std::string& options) const;

private:
    struct Entry {
        std::string name, help, default_text, kind, placeholder;
        bool takes_value;
        // Sets the value; returns "" or why the text is refused ("expected integer", ...).
        std::function<std::string(const std::string&, const Entry&)> set;
        long lo = 0, hi = 0;  // an integer option's bounds
        bool given = false;
    };
    void add(Entry e);
    std::string program_, about_;
    std::vector<Entry> entries_;
    std::string* figure_dir_ = nullptr;
    bool* no_figures_ = nullptr;
};

// Parsers used by the options above, exposed for tests and for programs that read text.
enum class NumberParse { ok, not_a_number, out_of_range };
NumberParse parse_int_checked(const std::string& s, long lo, long hi, long& out);
NumberParse parse_double_checked(const std::string& s, double& out);  // finite values only
bool parse_int(const std::string& s, long& out);
bool parse_double(const std::string& s, double& out);
// false for anything but a comma-separated list of ints; then, where an entry is an integer
// beyond int, that entry in *out_of_range (when given).
bool parse_int_list(const std::string& s, std::vector<int>& out,
                    std::string* out_of_range = nullptr);

// What a Parser does for every program that builds one, for a main that has none: at exit,
// stdout is flushed and checked, and a failed write ends the program with exit code 1 and
// "<program>: error: cannot write output: <reason>".
void check_stdout_at_exit(const std::string& program);
// What an error line says of an exception: its what(), but "out of memory: ..." for
// std::bad_alloc (whose what() is "std::bad_alloc"), as an uncaught one ends a program.
const char* error_text(const std::exception& e);
// For a loop that prints as it reads its input (a line mode): flushes stdout now and, where a
// write failed, ends the program as the exit check does (exit code 1, "<program>: error:
// cannot write output: <reason>") instead of reading on with nowhere to print: `yes 3 |
// program > /dev/full` would otherwise never end.
void flush_stdout_or_exit();

// s in single quotes, printable as one line: \n \t \r \\ \' escaped, other control
// characters, DEL and bytes that are not UTF-8 as \xNN; Hangul and other text kept.
//   quote("8\n9") == "'8\\n9'"   quote("\x1b[2J") == "'\\x1b[2J'"
std::string quote(const std::string& s);
// The same for bytes from a file: at most `max_bytes` of s (cut at a character boundary), then
// "...(N bytes)" after the closing quote when it was cut.
//   quote(std::string(3'000'000, 'x'), 8) == "'xxxxxxxx'...(3000000 bytes)"
std::string quote(std::string_view s, size_t max_bytes);

// For a line mode (chapter 1's --live, the flashcards): one line of stdin without its '\n' (or
// "\r\n"); false at the end of the input. A line is cut after INPUT_LINE_MAX bytes, far more
// than any key: it is refused as it stands, and input without newlines (</dev/zero) is not
// read into memory whole.
constexpr size_t INPUT_LINE_MAX = 4096;
bool read_input_line(std::string& line);
// Such a line as an error quotes it: quote(line, 40), with "...(over 4096 bytes)" after a line
// read_input_line cut (its whole length is not known).
std::string quote_input_line(const std::string& line);

}  // namespace cli
