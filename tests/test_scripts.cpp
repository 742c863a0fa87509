// The repository's shell scripts on crafted input, each run on copies in a folder of its own
// under /tmp (the tree's README is never written):
// - bench/readme-block.sh, which bench/claims-table.sh and bench/readme-numbers.sh source: a
//   README without exactly one begin marker before one end marker is refused; the block reaches
//   the README as it is, through a file that replaces it only when whole;
// - both scripts read FILE from the caller's folder;
// - bench/readme-numbers.sh refuses a run that lacks a layer, a number or a line it names;
// - bench/claims-table.sh refuses a field that is not what 8-ablations writes, and a primary
//   comparison it has no words of the article for;
// - tests/run-suite.sh deletes only the logs it wrote, checks its arguments, runs one at a time
//   in a LOG_DIR, and counts a case failed only where it ran.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "tests/util.h"

namespace {

namespace fs = std::filesystem;

const std::string ROOT = PROJECT_ROOT;

using testutil::quote;

// A folder of its own, laid out as the repository (bench/ with its scripts and last-run.txt,
// figures/8-ablations*.tsv, tests/run-suite.sh, README.md and chapter 8's), removed at the end
// of the test case.
struct Scratch {
    std::string dir;
    explicit Scratch(const std::string& name)
        : dir("/tmp/transformer-test-scripts-" + std::to_string(::getpid()) + "-" + name) {
        const std::string cmd =
            "rm -rf " + quote(dir) + " && mkdir -p " + quote(dir) + "/bench " + quote(dir) +
            "/figures " + quote(dir) + "/tests " + quote(dir) + "/chapters/8-ablations && cp " +
            quote(ROOT) + "/bench/*.sh " + quote(ROOT) + "/bench/last-run.txt " + quote(dir) +
            "/bench/ && cp " + quote(ROOT) + "/README.md " + quote(dir) + "/ && cp " +
            quote(ROOT) + "/chapters/8-ablations/README.md " + quote(dir) +
            "/chapters/8-ablations/ && cp " + quote(ROOT) + "/figures/8-ablations*.tsv " +
            quote(dir) + "/figures/ && cp " + quote(ROOT) + "/tests/run-suite.sh " + quote(dir) +
            "/tests/";
        REQUIRE(std::system(cmd.c_str()) == 0);
    }
    ~Scratch() { std::system(("rm -rf " + quote(dir)).c_str()); }
    std::string path(const std::string& relative) const { return dir + "/" + relative; }
    std::string read(const std::string& relative) const {
        return testutil::read_file_abs(path(relative));
    }
    void write(const std::string& relative, const std::string& text) const {
        std::ofstream(path(relative), std::ios::binary) << text;
    }
};

struct Sh {
    int exit_code;
    std::string out, err;
};

// Runs the sh command line in folder `dir`, without stdin, and captures stdout and stderr.
Sh sh(const std::string& dir, const std::string& command) {
    static int counter = 0;
    const std::string tmp = "/tmp/transformer-test-scripts-out-" + std::to_string(::getpid()) +
                            "-" + std::to_string(counter++);
    const std::string cmd =
        "cd " + quote(dir) + " && " + command + " </dev/null >" + tmp + ".out 2>" + tmp + ".err";
    const int status = std::system(cmd.c_str());
    Sh r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, testutil::read_file_abs(tmp + ".out"),
         testutil::read_file_abs(tmp + ".err")};
    std::remove((tmp + ".out").c_str());
    std::remove((tmp + ".err").c_str());
    return r;
}

size_t lines_in(const std::string& text) {
    return size_t(std::count(text.begin(), text.end(), '\n'));
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The text with its first `from` replaced by `to` (which must be there).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    return text.replace(at, from.size(), to);
}

// The line (from 1) of the 8-ablations summary row whose variant is `variant`; 0: none.
size_t line_of(const std::string& tsv, const std::string& variant) {
    std::istringstream in(tsv);
    size_t n = 0;
    for (std::string row; std::getline(in, row);) {
        n++;
        std::vector<std::string> fields;
        std::istringstream cells(row);
        for (std::string cell; std::getline(cells, cell, '\t');)
            fields.push_back(cell);
        if (fields.size() > 4 && fields[4] == variant) return n;
    }
    return 0;
}

// A TSV with field `field` (from 1) of line `line` (from 1) set to `value`; "" with drop removes
// the field and its tab.
std::string with_field(const std::string& tsv, size_t line, size_t field, const std::string& value,
                       bool drop = false) {
    std::istringstream in(tsv);
    std::string out;
    size_t n = 0;
    for (std::string row; std::getline(in, row);) {
        if (++n == line) {
            std::vector<std::string> fields;
            std::istringstream cells(row);
            for (std::string cell; std::getline(cells, cell, '\t');)
                fields.push_back(cell);
            REQUIRE(field <= fields.size());
            if (drop)
                fields.erase(fields.begin() + long(field - 1));
            else
                fields[field - 1] = value;
            row.clear();
            for (size_t i = 0; i < fields.size(); i++)
                row += (i ? "\t" : "") + fields[i];
        }
        out += row + "\n";
    }
    return out;
}

// The names in a folder that start with `prefix` (a temporary file left beside the README).
std::vector<std::string> names_starting(const std::string& dir, const std::string& prefix) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    return names;
}

}  // namespace

TEST_CASE("claims-table.sh and readme-numbers.sh: a README without one begin before one end") {
    Scratch s("markers");
    struct Script {
        std::string file, name, program, args;
    };
    for (const Script& script :
         {Script{"chapters/8-ablations/README.md", "claims", "claims-table.sh", " --update"},
          Script{"README.md", "verdicts", "claims-table.sh", " --update"},
          Script{"README.md", "bench", "readme-numbers.sh", " bench/last-run.txt --update"}}) {
        const std::string readme = s.read(script.file);
        const std::string begin = "<!-- " + script.name + ":begin",
                          end = "<!-- " + script.name + ":end";
        const size_t b = readme.find("\n" + begin) + 1, e = readme.find("\n" + end) + 1;
        REQUIRE(b > 0);
        REQUIRE(e > b);
        const size_t after_end = readme.find('\n', e) + 1;
        const std::string second_begin =
            readme.substr(0, after_end) + begin + " again -->\n" + readme.substr(after_end);
        const std::string swapped = replaced(replaced(readme, end, "@@"), begin, end);
        const std::string swapped_back = replaced(swapped, "@@", begin);
        const std::string no_end = readme.substr(0, e) + readme.substr(after_end);
        const std::string two_ends =
            readme.substr(0, after_end) + end + " -->\n" + readme.substr(after_end);
        for (const std::string& text : {second_begin, swapped_back, no_end, two_ends}) {
            CAPTURE(script.name);
            s.write(script.file, text);
            const auto r = sh(s.dir, "bash bench/" + script.program + script.args);
            CHECK(r.exit_code == 1);
            CHECK_MESSAGE(
                r.err.rfind(script.program + ": " + s.path(script.file) + " has ", 0) == 0, r.err);
            CHECK(lines_in(r.err) == 1);
            CHECK(s.read(script.file) == text);
            const std::string folder = fs::path(s.path(script.file)).parent_path();
            CHECK(names_starting(folder, "README.md").size() == 1);  // no temporary file left
        }
        s.write(script.file, readme);
    }
}

TEST_CASE("claims-table.sh and readme-numbers.sh: a field's backslashes reach the README as is") {
    Scratch s("escapes");
    const std::string readme = s.read("README.md"),
                      guide = s.read("chapters/8-ablations/README.md");
    // awk -v would make these a tab and a newline, splitting the table's row and the line.
    const std::string tsv = s.read("figures/8-ablations.tsv");
    const size_t row = line_of(tsv, "unscaled-16:exact");
    REQUIRE(row > 1);
    s.write("s.tsv", with_field(tsv, row, 1, "a\\tb\\nc"));
    auto r = sh(s.dir, "bash bench/claims-table.sh s.tsv --update");
    CHECK(r.exit_code == 0);
    std::string now = s.read("chapters/8-ablations/README.md");
    CHECK(has(now, "| §2 | a\\tb\\nc | exploratory | sign-flip | exact_pp | base:exact | "
                   "unscaled-16:exact |"));
    CHECK(lines_in(now) == lines_in(guide));
    CHECK(s.read("README.md") == readme);
    s.write("run.txt",
            replaced(s.read("bench/last-run.txt"), "# cpu: AMD EPYC", "# cpu: AMD\\tEPYC\\n9"));
    r = sh(s.dir, "bash bench/readme-numbers.sh run.txt --update");
    CHECK(r.exit_code == 0);
    now = s.read("README.md");
    CHECK(has(now, "- `make bench` on AMD\\tEPYC\\n9 (2 cores)"));
    CHECK(lines_in(now) == lines_in(readme));
    CHECK(s.read("bench/last-run.txt") == s.read("run.txt"));
}

TEST_CASE("claims-table.sh --update: a table over 128 KiB reaches the README") {
    // More than one environment string holds (Linux: 128 KiB), less than the 1 MiB FILE limit.
    Scratch s("big-table");
    const std::string tsv = s.read("figures/8-ablations.tsv");
    const size_t header = tsv.find('\n') + 1;
    std::string big = tsv;
    while (big.size() < 200'000)
        big += tsv.substr(header);
    s.write("big.tsv", big);
    const auto r = sh(s.dir, "bash bench/claims-table.sh big.tsv --update");
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    CHECK(r.out.size() > 128 * 1024);
    CHECK(has(s.read("chapters/8-ablations/README.md"), "-->\n" + r.out + "<!-- claims:end"));
}

TEST_CASE("readme-block.sh: the README is replaced whole or not at all, its mode and link kept") {
    Scratch s("block");
    const std::string readme = s.read("README.md");
    const std::string call = "bash -c '. bench/readme-block.sh && readme_block_replace test " +
                             std::string("\"$0\" verdicts \"$1\"' ");
    // A text holding a marker line would leave two: refused, the README as it was.
    auto r = sh(s.dir, call + "README.md \"$(printf 'row\\n<!-- verdicts:end -->')\"");
    CHECK(r.exit_code == 1);
    CHECK(r.err.rfind("test: the new README.md would not be whole", 0) == 0);
    CHECK(lines_in(r.err) == 1);
    CHECK(s.read("README.md") == readme);
    CHECK(names_starting(s.dir, "README.md").size() == 1);
    // Written: the text between the markers, the mode of the file it replaces, through a link.
    REQUIRE(::chmod(s.path("README.md").c_str(), 0640) == 0);
    fs::create_directory(s.path("real"));
    fs::rename(s.path("README.md"), s.path("real/README.md"));
    fs::create_symlink("real/README.md", s.path("README.md"));
    r = sh(s.dir, call + "README.md '| one | row |'");
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    CHECK(fs::is_symlink(s.path("README.md")));
    struct stat st {};
    REQUIRE(::stat(s.path("real/README.md").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0640);
    const std::string now = s.read("real/README.md");
    CHECK(has(now, "-->\n| one | row |\n<!-- verdicts:end -->\n"));
    CHECK(now.substr(0, readme.find("<!-- verdicts:begin")) ==
          readme.substr(0, readme.find("<!-- verdicts:begin")));
    CHECK(now.substr(now.find("<!-- verdicts:end")) ==
          readme.substr(readme.find("<!-- verdicts:end")));
    CHECK(names_starting(s.path("real"), "README.md").size() == 1);
}

TEST_CASE("claims-table.sh and readme-numbers.sh: FILE is read from the caller's folder") {
    Scratch s("paths");
    fs::create_directory(s.path("elsewhere"));
    const std::string elsewhere = s.path("elsewhere");
    s.write("elsewhere/s.tsv", s.read("figures/8-ablations.tsv"));
    auto r = sh(elsewhere, "bash ../bench/claims-table.sh s.tsv");
    CHECK(r.exit_code == 0);
    CHECK(r.out == sh(s.dir, "bash bench/claims-table.sh figures/8-ablations.tsv").out);
    r = sh(elsewhere, "bash ../bench/claims-table.sh missing.tsv");
    CHECK(r.exit_code == 1);
    const std::string said = "claims-table.sh: cannot read " + elsewhere + "/missing.tsv";
    CHECK(r.err == said + " (a file: run make ablations)\n");
    // --update from another folder reads FILE there and writes the script's repository's README.
    // (the kept run's date line, whatever its date, made one no run has)
    std::string run = s.read("bench/last-run.txt");
    const size_t date = run.find("# date: ");
    REQUIRE(date != std::string::npos);
    run.replace(date, run.find('\n', date) - date, "# date: 2000-01-02");
    s.write("elsewhere/run.txt", run);
    r = sh(elsewhere, "bash ../bench/readme-numbers.sh run.txt --update");
    CHECK(r.exit_code == 0);
    CHECK(has(s.read("README.md"), ", 2000-01-02, load average"));
    CHECK(s.read("bench/last-run.txt") == s.read("elsewhere/run.txt"));
    CHECK(!fs::exists(s.path("elsewhere/README.md")));
    r = sh(elsewhere, "bash ../bench/readme-numbers.sh missing.txt");
    CHECK(r.exit_code == 1);
    CHECK(has(r.err, "readme-numbers.sh: cannot read " + elsewhere + "/missing.txt"));
    r = sh(elsewhere, "bash ../bench/claims-table.sh s.tsv s.tsv");
    CHECK(r.exit_code == 2);
    CHECK(lines_in(r.err) == 1);
}

TEST_CASE("claims-table.sh and readme-numbers.sh: a FIFO, a device or a huge FILE is refused") {
    Scratch s("special");
    const std::string fifo = s.path("fifo"), zero = s.path("zero"), big = s.path("big.txt");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::create_symlink("/dev/zero", zero);  // read to the end, it never ends
    std::ofstream(big) << "x";
    fs::resize_file(big, (1 << 20) + 1);
    for (const char* script : {"claims-table.sh", "readme-numbers.sh"}) {
        for (const std::string& file : {fifo, zero}) {
            CAPTURE(script);
            CAPTURE(file);
            auto r = sh(s.dir, "timeout 20 bash bench/" + std::string(script) + " " + file);
            CHECK(r.exit_code == 1);
            CHECK(has(r.err, std::string(script) + ": cannot read " + file));
            CHECK(lines_in(r.err) == 1);
        }
        auto r = sh(s.dir, "timeout 20 bash bench/" + std::string(script) + " " + big);
        CHECK(r.exit_code == 1);
        CHECK(r.err == std::string(script) + ": " + big + " is 1048577 bytes, larger than 1 MiB: "
                                                          "no summary or bench run is; name the "
                                                          "file 8-ablations or make bench wrote\n");
    }
}

TEST_CASE("scripts: an option's CR is shown as bash quotes it, not sent to the terminal") {
    // Quoted as bash quotes it ($'...'): a CR sent raw would move the cursor over the line.
    const std::string option = " \"$(printf -- '--x\\r')\"";
    for (const char* script :
         {"bench/claims-table.sh", "bench/readme-numbers.sh", "cuda/bench/gpu-check.sh"}) {
        CAPTURE(script);
        const auto r = sh(ROOT, std::string("bash ") + script + option);
        CHECK(r.exit_code == 2);
        CHECK(r.err.rfind(fs::path(script).filename().string() + ": unknown option $'--x\\r' (see",
                          0) == 0);
        CHECK(lines_in(r.err) == 1);
    }
}

namespace {

// The text without its lines that hold `part`.
std::string without_lines(const std::string& text, const std::string& part) {
    std::istringstream in(text);
    std::string kept;
    for (std::string line; std::getline(in, line);)
        if (!has(line, part)) kept += line + "\n";
    return kept;
}

// [begin, end) of the first line of `text` that starts with `prefix` (end at its '\n').
std::pair<size_t, size_t> line_starting(const std::string& text, const std::string& prefix) {
    const bool first = text.compare(0, prefix.size(), prefix) == 0;
    const size_t newline = first ? 0 : text.find("\n" + prefix);
    REQUIRE_MESSAGE(newline != std::string::npos, prefix);
    const size_t at = first ? 0 : newline + 1;
    return {at, std::min(text.find('\n', at), text.size())};
}

// `text` with one word changed in the first line that starts with `prefix`: in that line's
// field-th field (split at '|', from 0), its word-th word (split at spaces, from 0) becomes `to`,
// right-aligned in the word's width where it is shorter. The kept run's numbers change with
// every `make bench`: the cases below name a row and a column, not the numbers in them.
std::string with_word(const std::string& text, const std::string& prefix, int field, int word,
                      const std::string& to) {
    const auto [at, end] = line_starting(text, prefix);
    std::string line = text.substr(at, end - at);
    size_t from = 0;
    for (int f = 0; f < field; f++) {
        from = line.find('|', from);
        REQUIRE_MESSAGE(from != std::string::npos, prefix);
        from++;
    }
    size_t start = from, stop = from;
    for (int w = 0; w <= word; w++) {
        start = line.find_first_not_of(' ', stop);
        stop = line.find_first_of(" |", start);
        if (stop == std::string::npos) stop = line.size();
    }
    REQUIRE_MESSAGE(start < line.size(), prefix);
    const size_t width = stop - start;
    line.replace(start, width, (to.size() < width ? std::string(width - to.size(), ' ') : "") + to);
    return text.substr(0, at) + line + text.substr(end);
}

// `text` with each line ending in "\r\n", as an editor on Windows saves it.
std::string crlf(const std::string& text) {
    std::string out;
    for (char c : text)
        out += c == '\n' ? std::string("\r\n") : std::string(1, c);
    return out;
}

// `text` with the first line that starts with `prefix` replaced by `line`.
std::string with_line(const std::string& text, const std::string& prefix, const std::string& line) {
    const auto [at, end] = line_starting(text, prefix);
    return text.substr(0, at) + line + text.substr(end);
}

}  // namespace

TEST_CASE("readme-numbers.sh: a run without a layer, a number or a line it names is refused") {
    Scratch s("numbers");
    const std::string run = s.read("bench/last-run.txt"), readme = s.read("README.md");
    REQUIRE(has(run, "  1024 | fused "));
    // The run the README's lines came from gives them again, byte for byte.
    auto r = sh(s.dir, "bash bench/readme-numbers.sh bench/last-run.txt --update");
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    CHECK(s.read("README.md") == readme);

    struct Case {
        std::string text;
        std::string says;  // what the one line names as missing
    };
    const Case cases[] = {
        {without_lines(run, "| fused "), "no fused row at n = 256 in the bench-layers table"},
        {without_lines(run, "  1024 | LSTM "), "no LSTM row at n = 1024"},
        {with_word(run, "  1024 | fused ", 2, 0, "abc"),
         "the fused row at n = 1024 has \"abc\" for its ms, not a positive number"},
        {with_word(run, "   256 | fused ", 3, 0, "0.0"),
         "the fused row at n = 256 has \"0.0\" for its peak MB, not a positive number"},
        {with_word(run, "   256 | LSTM ", 4, 2, "-"),
         "the LSTM row at n = 256 has \"-\" for its ratio"},
        {with_word(run, "   256    A@B |", 1, 0, "x"),
         "the sgemm row 256 A@B has \"x\" for its GFLOP/s"},
        {run + run, "a second sgemm row 256 A@B"},
        {without_lines(run, "# cores: "), "no \"# cores: N\" line"},
        {without_lines(run, "# load after: "), "no \"# load after: N\" line"},
        {with_line(run, "# load before: ", "# load before: low"), "no \"# load before: N\""},
        {without_lines(run, "# date: "), "no \"# date: YYYY-MM-DD\" line"},
        {without_lines(run, "batch = "), "no \"batch = ...\" line"},
        {without_lines(run, "yardstick: "), "without the \"yardstick: OpenBLAS ...; core NAME\""},
        {with_word(run, "chapter 7 training step: ours ", 0, 5, "?"),
         "training step has no \"ours N ms\""},
        {"", "no bench-layers table"},
        // The CR is shown, not sent: it would move the cursor back over the line.
        {crlf(run), "x\\r\" for its ratio, not a number and x; run the benchmarks again"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.says);
        s.write("run.txt", c.text);
        for (const char* update : {" --update", ""}) {
            CAPTURE(update);
            r = sh(s.dir, std::string("bash bench/readme-numbers.sh run.txt") + update);
            CHECK(r.exit_code == 1);
            CHECK(r.out == "");
            CHECK(r.err.rfind("readme-numbers.sh: " + s.path("run.txt") + ": ", 0) == 0);
            CHECK_MESSAGE(has(r.err, c.says), r.err);
            CHECK(lines_in(r.err) == 1);
            CHECK(s.read("README.md") == readme);
            CHECK(s.read("bench/last-run.txt") == run);
        }
    }
}

TEST_CASE("claims-table.sh: a field that is not what 8-ablations writes is refused") {
    Scratch s("claims-fields");
    const std::string tsv = s.read("figures/8-ablations.tsv"), readme = s.read("README.md"),
                      guide = s.read("chapters/8-ablations/README.md");
    auto r = sh(s.dir, "bash bench/claims-table.sh --update");
    CHECK(r.exit_code == 0);
    CHECK(s.read("README.md") == readme);
    CHECK(s.read("chapters/8-ablations/README.md") == guide);
    // The row of the d_k = 16 comparison (exploratory, sign-flip), line L of the file: its
    // interval, which a diff outside it is refused against.
    const size_t L = line_of(tsv, "unscaled-16:exact");
    REQUIRE(L > 1);
    const std::string Ls = std::to_string(L);
    std::vector<std::string> picked;
    {
        std::istringstream in(tsv);
        std::string row;
        for (size_t i = 0; i < L; i++)
            std::getline(in, row);
        std::istringstream cells(row);
        for (std::string cell; std::getline(cells, cell, '\t');)
            picked.push_back(cell);
    }
    REQUIRE(picked.size() == 16);
    REQUIRE(std::stod(picked[6]) < std::stod(picked[7]));  // a finite interval, 9.99 outside it
    REQUIRE(std::stod(picked[7]) < 9.99);

    struct Case {
        std::string text;
        std::string says;  // after "claims-table.sh: FILE line "
    };
    const Case cases[] = {
        {with_field(tsv, L, 6, "abc"), Ls + ": field 6 (diff) is \"abc\", not a number"},
        {with_field(tsv, L, 7, "x"), Ls + ": field 7 (ci_low) is \"x\", not a number"},
        {with_field(tsv, L, 8, "y"), Ls + ": field 8 (ci_high) is \"y\", not a number"},
        {with_field(tsv, L, 8, "-inf"), Ls + ": field 8 (ci_high) is \"-inf\", not a number"},
        // 5 seeds: a mean is a number
        {with_field(tsv, L, 6, "nan"), Ls + ": field 6 (diff) is \"nan\", not a number"},
        {with_field(tsv, L, 6, "1e3"), Ls + ": field 6 (diff) is \"1e3\", not a number"},
        {with_field(tsv, L, 9, "2.5"), Ls + ": field 9 (seeds) is \"2.5\", not a count"},
        {with_field(tsv, L, 10, "<abc"), Ls + ": field 10 (threshold) is \"<abc\", not <, > or ±"},
        {with_field(tsv, L, 11, "maybe"), Ls + ": field 11 (verdict) is \"maybe\", not reproduced"},
        {with_field(tsv, L, 6, "9.99"),
         Ls + ": diff 9.99 is outside its interval [" + picked[6] + ", " + picked[7] + "]"},
        {with_field(tsv, L, 4, "a|b"), Ls + ": field 4 (baseline) is \"a|b\": a | would split"},
        {with_field(tsv, L, 1, ""), Ls + ": field 1 (claim) is empty"},
        {with_field(tsv, L, 11, "", true), Ls + ": 15 fields, not 16 (separated by tabs)"},
        {with_field(tsv, L, 12, "6"), Ls + ": field 12 (valid) is \"6\", not a count of seeds"},
        {with_field(tsv, L, 13, "t-test"), Ls + ": field 13 (test) is \"t-test\", not sign-flip"},
        {with_field(tsv, L, 14, "main"), Ls + ": field 14 (family) is \"main\", not primary"},
        {with_field(tsv, L, 15, "1.5"), Ls + ": field 15 (p) is \"1.5\", not a probability"},
        {with_field(tsv, L, 16, "0.5x"), Ls + ": field 16 (p_adj) is \"0.5x\", not a probability"},
        {with_field(tsv, L, 6, "1\r\x1b[2J"),
         Ls + ": field 6 (diff) is \"1\\r\\x1b[2J\", not a number"},
        {with_field(tsv, 1, 11, "verdict\r"), "1: not the header of an 8-ablations summary"},
        {tsv.substr(0, tsv.find('\n') + 1), "1: the header alone: no comparison under it"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.says);
        s.write("s.tsv", c.text);
        r = sh(s.dir, "bash bench/claims-table.sh s.tsv --update");
        CHECK(r.exit_code == 1);
        CHECK(r.out == "");
        CHECK_MESSAGE(
            r.err.rfind("claims-table.sh: " + s.path("s.tsv") + " line " + c.says, 0) == 0, r.err);
        CHECK(lines_in(r.err) == 1);
        CHECK(s.read("README.md") == readme);
        CHECK(s.read("chapters/8-ablations/README.md") == guide);
    }
    s.write("s.tsv", "");
    r = sh(s.dir, "bash bench/claims-table.sh s.tsv");
    CHECK(r.exit_code == 1);
    CHECK(r.err == "claims-table.sh: " + s.path("s.tsv") +
                       " is empty, not an 8-ablations "
                       "summary\n");
    // What 8-ablations writes for one seed (no interval) and for none (no mean) is a row.
    std::string few = with_field(with_field(with_field(tsv, L, 6, "1.00"), L, 9, "1"), L, 12, "1");
    few = with_field(with_field(with_field(few, L, 7, "-inf"), L, 8, "inf"), L, 11, "undecided");
    const size_t M = L + 1;  // another row, for none
    std::string none = with_field(with_field(with_field(few, M, 6, "-nan"), M, 9, "0"), M, 12, "0");
    none = with_field(with_field(with_field(none, M, 7, "-inf"), M, 8, "inf"), M, 11, "undecided");
    s.write("s.tsv", none);
    r = sh(s.dir, "bash bench/claims-table.sh s.tsv");
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    CHECK(has(r.out, "| 1.00 [-inf, inf] | 1 / 1 | <-20 | 0.0625 | - | undecided |"));
    CHECK(has(r.out, "| nan [-inf, inf] | 0 / 0 |"));
}

TEST_CASE("claims-table.sh --verdicts: a primary comparison without the article's words") {
    Scratch s("verdicts");
    const std::string k9 = s.read("figures/8-ablations-k9.tsv"), readme = s.read("README.md"),
                      guide = s.read("chapters/8-ablations/README.md");
    auto r = sh(s.dir, "bash bench/claims-table.sh --verdicts");
    CHECK(r.exit_code == 0);
    CHECK(has(readme, r.out));
    const size_t L = line_of(k9, "heads-1:exact");
    REQUIRE(L > 1);
    const std::string file = s.path("figures/8-ablations-k9.tsv"),
                      at = " line " + std::to_string(L);
    const std::string no_words = with_field(k9, L, 5, "heads-2:exact"),
                      bad_field = with_field(k9, L, 11, "maybe");
    for (const char* args : {"--verdicts", "--update"}) {
        CAPTURE(args);
        s.write("figures/8-ablations-k9.tsv", no_words);
        r = sh(s.dir, std::string("bash bench/claims-table.sh ") + args);
        CHECK(r.exit_code == 1);
        CHECK(r.err == "claims-table.sh: " + file + at +
                           ": no words for the primary comparison heads-2:exact\n");
        s.write("figures/8-ablations-k9.tsv", bad_field);  // checked as any summary is
        r = sh(s.dir, std::string("bash bench/claims-table.sh ") + args);
        CHECK(r.exit_code == 1);
        CHECK(r.err.rfind("claims-table.sh: " + file + at + ": field 11 (verdict) is", 0) == 0);
        CHECK(s.read("README.md") == readme);
        CHECK(s.read("chapters/8-ablations/README.md") == guide);
    }
}

namespace {

// A stand-in for build/bin/tests: doctest's listing of FAKE_CASES cases, and a slice's run with
// a time line a case and doctest's summary. FAKE_FAIL=K fails case K; FAKE_CRASH=K crashes in it
// as doctest's signal handler reports it (its summary then, counting the cases up to K);
// FAKE_KILL=K is killed in it before any summary (SIGKILL).
const char* const FAKE_SUITE = R"(#!/usr/bin/env bash
n=${FAKE_CASES:-20}
if [ "$1" = --list-test-cases ]; then
    echo '[doctest] listing all test case names'
    echo '==============================================================================='
    for i in $(seq 1 "$n"); do echo "case $i"; done
    echo '==============================================================================='
    echo "[doctest] unskipped test cases passing the current filters: $n"
    exit 0
fi
for a; do case $a in --first=*) first=${a#--first=} ;; --last=*) last=${a#--last=} ;; esac; done
failed=0
for i in $(seq "$first" "$last"); do
    [ "$i" = "${FAKE_KILL:-0}" ] && kill -KILL $$
    if [ "$i" = "${FAKE_FAIL:-0}" ]; then
        echo "x.cpp:$i: ERROR: CHECK( false ) is NOT correct!"
        failed=$((failed + 1))
    fi
    if [ "$i" = "${FAKE_CRASH:-0}" ]; then
        echo "x.cpp:$i: FATAL ERROR: test case CRASHED: SIGSEGV - Segmentation violation signal"
        echo "0.001000 s: case $i"
        echo "[doctest] test cases: $i | $((i - failed - 1)) passed | $((failed + 1)) failed |"
        kill -SEGV $$
    fi
    echo "0.001000 s: case $i"
done
echo "[doctest] test cases: $n | $((n - failed)) passed | $failed failed | 0 skipped"
[ "$failed" = 0 ]
)";

// A scratch folder with the fake suite as ./fake; `suite(args)` runs tests/run-suite.sh there.
struct Suite : Scratch {
    explicit Suite(const std::string& name) : Scratch(name) {
        write("fake", FAKE_SUITE);
        REQUIRE(::chmod(path("fake").c_str(), 0755) == 0);
        write("order.txt", "");  // no slow cases
    }
    Sh run(const std::string& args, const std::string& env = "") const {
        return sh(dir, "SUITE_ORDER=order.txt " + env + " bash tests/run-suite.sh " + args);
    }
};

std::string last_line(const std::string& text) {
    const size_t end = text.find_last_not_of('\n');
    if (end == std::string::npos) return "";
    const size_t start = text.rfind('\n', end);
    return text.substr(start == std::string::npos ? 0 : start + 1, end - (start + 1) + 1);
}

}  // namespace

TEST_CASE("run-suite.sh: a usage line without its arguments; JOBS a whole number from 1") {
    Suite s("suite-args");
    auto r = s.run("");
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("usage: tests/run-suite.sh JOBS LOG_DIR PROGRAM [RUNNER...]", 0) == 0);
    CHECK(lines_in(r.err) == 1);
    for (const char* jobs : {"0", "-1", "1.5", "abc", "08", "''", "10000"}) {
        CAPTURE(jobs);
        r = s.run(std::string(jobs) + " logs ./fake");
        CHECK(r.exit_code == 2);
        CHECK(r.out == "");
        CHECK(r.err.rfind("tests/run-suite.sh: JOBS is '", 0) == 0);
        CHECK(has(r.err, "a whole number from 1 to 9999"));
        CHECK(lines_in(r.err) == 1);
        CHECK(!fs::exists(s.path("logs")));
    }
    r = s.run("\"$(printf '1\\r')\" logs ./fake");  // a CR shown, not sent to the terminal
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("tests/run-suite.sh: JOBS is $'1\\r': ", 0) == 0);
}

TEST_CASE("run-suite.sh: deletes only the files it wrote, in a folder it made") {
    Suite s("suite-logs");
    // A folder of someone else's files, and a file (the arguments swapped) are refused, kept.
    fs::create_directory(s.path("mine"));
    s.write("mine/notes.txt", "keep");
    auto r = s.run("2 mine ./fake");
    CHECK(r.exit_code == 2);
    CHECK(r.err ==
          "tests/run-suite.sh: LOG_DIR mine holds notes.txt, which this script did not "
          "write; name a new or empty folder for the logs\n");
    CHECK(s.read("mine/notes.txt") == "keep");
    const std::string fake = s.read("fake");
    r = s.run("2 fake logs");  // PROGRAM, LOG_DIR swapped
    CHECK(r.exit_code == 2);
    CHECK(lines_in(r.err) == 1);
    CHECK(s.read("fake") == fake);
    r = s.run("2 ./fake ./fake");  // LOG_DIR a file
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("tests/run-suite.sh: LOG_DIR ./fake is not a folder", 0) == 0);
    CHECK(s.read("fake") == fake);
    // Its own folder: a file added there stays, its own files of an earlier run go.
    r = s.run("1 logs ./fake");
    CHECK(r.exit_code == 0);
    CHECK(last_line(r.out) ==
          "tests: 20 of 20 test cases passed, 0 failed (7 slices on 1 cores; logs in logs/)");
    s.write("logs/notes.txt", "keep");
    s.write("logs/slice-99.log", "an earlier run's slice");
    r = s.run("2 logs ./fake");
    CHECK(r.exit_code == 0);
    CHECK(s.read("logs/notes.txt") == "keep");
    CHECK(!fs::exists(s.path("logs/slice-99.log")));
    // A folder from before the marker, holding only the names the script writes, is taken.
    fs::create_directory(s.path("old"));
    for (const char* name :
         {"cases.txt", "slices.txt", "durations.txt", "slice-3.log", "slice-3.rc"})
        s.write(std::string("old/") + name, "old");
    r = s.run("2 old ./fake");
    CHECK(r.exit_code == 0);
    CHECK(has(r.out, "tests: 20 of 20 test cases passed, 0 failed"));
}

TEST_CASE("run-suite.sh: one run at a time in LOG_DIR; a SUITE_ORDER that is not a file") {
    Suite s("suite-lock");
    auto r = s.run("1 logs ./fake");
    REQUIRE(r.exit_code == 0);
    // A second run while one holds the folder is refused; the first one's logs stay.
    s.write("logs/slice-0.log", "the first run's slice");
    r = s.run("1 logs ./fake", "flock logs/.run-suite-logs");
    CHECK(r.exit_code == 1);
    CHECK(r.err ==
          "tests/run-suite.sh: another run is writing its logs in logs; wait for it to end, or "
          "name another LOG_DIR\n");
    CHECK(s.read("logs/slice-0.log") == "the first run's slice");
    // ORDER is read before the slices start: a FIFO would block that read for ever.
    REQUIRE(::mkfifo(s.path("fifo").c_str(), 0600) == 0);
    r = s.run("1 logs ./fake", "timeout 20 env SUITE_ORDER=fifo");
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("tests/run-suite.sh: SUITE_ORDER fifo is not a readable file", 0) == 0);
    CHECK(lines_in(r.err) == 1);
}

TEST_CASE("run-suite.sh: a case counts as failed only where it ran") {
    Suite s("suite-count");
    struct Case {
        std::string env, last;
    };
    const std::string tail = " (7 slices on 1 cores; logs in logs/)";
    // 20 cases on 1 core: slices of 3 (1-3, 4-6, ...); case 5 is the middle of its slice.
    for (const Case& c : {
             Case{"FAKE_KILL=5", "tests: 18 of 20 test cases passed, 1 failed, 1 not run"},
             Case{"FAKE_CRASH=5", "tests: 18 of 20 test cases passed, 1 failed, 1 not run"},
             Case{"FAKE_FAIL=4 FAKE_KILL=5",
                  "tests: 17 of 20 test cases passed, 2 failed, 1 not run"},
             Case{"FAKE_FAIL=5", "tests: 19 of 20 test cases passed, 1 failed"},
             Case{"FAKE_KILL=4", "tests: 17 of 20 test cases passed, 1 failed, 2 not run"},
         }) {
        CAPTURE(c.env);
        const auto r = s.run("1 logs ./fake", c.env);
        CHECK(r.exit_code == 1);
        CHECK(last_line(r.out) == c.last + tail);
    }
}
