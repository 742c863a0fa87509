// Command-line flags: `--name value` options with defaults, `--help` lists them.
//
//   cli::Parser cli("2-scaling", "Section 2: why divide by sqrt(d_k)");
//   int trials = 20000;           cli.option("--trials", trials, "Monte Carlo trials per d_k");
//   std::vector<int> dims = {4};  cli.option("--dims", dims, "comma-separated list of d_k");
//   bool no_figures = false;      cli.flag("--no-figures", no_figures, "skip writing PNGs");
//   cli.parse(argc, argv);        // exits 0 after --help, exits 2 on a bad flag or value
//
// A bad flag or value prints one line naming it (and the fix) on stderr and exits with 2.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace cli {

class Parser {
public:
    Parser(std::string program, std::string about);

    void option(const std::string& name, int& value, const std::string& help);
    void option(const std::string& name, long& value, const std::string& help);
    void option(const std::string& name, double& value, const std::string& help);
    void option(const std::string& name, std::string& value, const std::string& help);
    void option(const std::string& name, std::vector<int>& value, const std::string& help);
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
        std::string name, help, default_text, kind;
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

}  // namespace cli
