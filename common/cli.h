// Command-line flags: `--name value` options with defaults, `--help` lists them.
//
//   cli::Parser cli("2-scaling", "Section 2: why divide by sqrt(d_k)");
//   int trials = 20000;           cli.option("--trials", trials, "Monte Carlo trials per d_k");
//   std::vector<int> dims = {4};  cli.option("--dims", dims, "comma-separated list of d_k");
//   std::string mask = "none";    cli.choice("--mask", mask, {"none", "causal"}, "the mask");
//   std::string deck = "deck.md"; cli.path("--deck", deck, "the deck to read");  // not ""
//   cli.figures(figure_dir, no_figures, "2-scaling.png");  // --figure-dir DIR, --no-figures
//   bool quiet = false;           cli.flag("--quiet", quiet, "print less");
//   cli.parse(argc, argv);        // exits 0 after --help, exits 2 on a bad flag or value
//
// --help shows each option with a placeholder for its value: N for an integer, X for a number,
// LIST for a comma-separated list, TEXT for text, FILE for a path, a|b for a choice; the last
// argument of option() and path() names another (I, DIR, ...).
// A bad flag or value prints one line naming it (and the fix) on stderr and exits with 2; the
// value is shown quoted, control characters escaped (quote() below), so that it can neither
// break the line nor send escape codes to the terminal.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace cli {

class Parser {
public:
    Parser(std::string program, std::string about);

    void option(const std::string& name, int& value, const std::string& help,
                const std::string& placeholder = "N");
    void option(const std::string& name, long& value, const std::string& help,
                const std::string& placeholder = "N");
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
    // A flag takes no value: present means true.
    void flag(const std::string& name, bool& value, const std::string& help);

    void parse(int argc, char** argv);
    void print_help() const;
    // For checks that need more than one value: prints "<program>: error: <message>" and exits 2.
    [[noreturn]] void fail(const std::string& message) const;
    // Fails (as above) when `bytes`, what the chosen `options` make the program hold at once,
    // exceed the machine's memory: one line instead of std::bad_alloc or the OOM killer.
    void require_memory(double bytes, const std::string& options) const;

private:
    struct Entry {
        std::string name, help, default_text, kind, placeholder;
        bool takes_value;
        std::function<bool(const std::string&)> set;  // false: the value does not parse
    };
    void add(Entry e);
    std::string program_, about_;
    std::vector<Entry> entries_;
};

// Parsers used by the options above, exposed for tests and for programs that read text.
bool parse_int(const std::string& s, long& out);
bool parse_double(const std::string& s, double& out);
bool parse_int_list(const std::string& s, std::vector<int>& out);

// s in single quotes, printable as one line: \n \t \r \\ \' escaped, other control
// characters, DEL and bytes that are not UTF-8 as \xNN; Hangul and other text kept.
//   quote("8\n9") == "'8\\n9'"   quote("\x1b[2J") == "'\\x1b[2J'"
std::string quote(const std::string& s);

}  // namespace cli
