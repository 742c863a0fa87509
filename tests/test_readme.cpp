// README.md, the page a newcomer starts from, and the guides it links (Markdown files it names):
// every repository path they name in backticks exists; every `make TARGET` they name is one
// `make help` lists, and every target `make help` lists is in the README; every option they give
// a program (`build/bin/NAME --option`) is one its --help lists; the README's table of contents
// and code guide stay near the top, and its links lead to its sections. A renamed file, a
// target taken out of the Makefile or a retitled section fails here, not in a reader's terminal.
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "tests/util.h"

namespace {

// The README's code: each inline `span`, and each line of a fenced block (```).
std::vector<std::string> code_spans(const std::string& text) {
    std::vector<std::string> spans;
    std::istringstream in(text);
    bool fenced = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("```", 0) == 0) {
            fenced = !fenced;
            continue;
        }
        if (fenced) {
            spans.push_back(line);
            continue;
        }
        for (size_t a = line.find('`'); a != std::string::npos;) {
            const size_t b = line.find('`', a + 1);
            if (b == std::string::npos) break;
            spans.push_back(line.substr(a + 1, b - a - 1));
            a = line.find('`', b + 1);
        }
    }
    return spans;
}

// A span cut into words as the shell cuts a command: quotes group, and are dropped.
std::vector<std::string> shell_words(const std::string& s) {
    std::vector<std::string> words;
    std::string word;
    bool in_word = false;
    char quote = 0;
    for (char c : s) {
        if (quote) {
            if (c == quote)
                quote = 0;
            else
                word += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = true;
        } else if (c == ' ' || c == '\t') {
            if (in_word) words.push_back(word);
            word.clear();
            in_word = false;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (in_word) words.push_back(word);
    return words;
}

// A word that names a file or folder of the repository: plain path characters, and a '/' or
// one of the extensions the tree holds. Options, assignments, globs, URLs and placeholders
// (build/bin/<name>) are not paths.
bool looks_like_path(const std::string& w) {
    if (w.empty() || w[0] == '-' || w[0] == '/') return false;
    for (char c : w)
        if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("_./+-", c)) return false;
    if (w.find('/') != std::string::npos) return true;
    for (const char* ext : {".h", ".cpp", ".cu", ".cuh", ".mk", ".sh", ".py", ".pl", ".md",
                            ".png", ".tsv", ".txt", ".json"}) {
        const std::string e = ext;
        if (w.size() > e.size() && w.compare(w.size() - e.size(), e.size(), e) == 0) return true;
    }
    return false;
}

// Whether git ignores the path by a rule of the top .gitignore (build/, figures/6-cost.png,
// ...): the README may name what a build writes, which a fresh clone does not have.
bool build_output(const std::string& path, const std::string& gitignore) {
    std::istringstream in(gitignore);
    for (std::string rule; std::getline(in, rule);) {
        if (rule.empty() || rule[0] == '#') continue;
        if (rule[0] == '/') rule.erase(0, 1);
        if (!rule.empty() && rule.back() == '/') {  // a folder: the path is in it, or is it
            rule.pop_back();
            if (fnmatch((rule + "/*").c_str(), path.c_str(), 0) == 0 ||
                fnmatch(rule.c_str(), path.c_str(), 0) == 0 ||
                fnmatch((rule + "/").c_str(), path.c_str(), 0) == 0)
                return true;
        } else if (fnmatch(rule.c_str(), path.c_str(), 0) == 0) {
            return true;
        }
    }
    return false;
}

// The targets `make help` prints ("  make NAME  what it does"), asked of the project's own
// Makefile from an empty environment: the make running the tests hands down its variables.
std::set<std::string> help_targets() {
    const std::string out = "/tmp/transformer-test-readme-help-" + std::to_string(::getpid());
    const std::string cmd = "env -i PATH=\"$PATH\" make -s --no-print-directory -C " +
                            testutil::quote(PROJECT_ROOT) + " help >" + out + " 2>&1";
    const int status = std::system(cmd.c_str());
    const std::string text = testutil::read_file_abs(out);
    std::remove(out.c_str());
    REQUIRE_MESSAGE(status == 0, "make help failed:\n" << text);
    std::set<std::string> targets;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("  make ", 0) != 0) continue;
        std::istringstream words(line.substr(7));
        std::string name;
        if (words >> name) targets.insert(name);
    }
    return targets;
}

// GitHub's anchor for a heading: lower case, spaces to '-', punctuation other than '-' and '_'
// dropped (letters beyond ASCII kept).
std::string anchor(const std::string& heading) {
    std::string a;
    for (unsigned char c : heading) {
        if (c >= 0x80 || std::isalnum(c) || c == '-' || c == '_')
            a += static_cast<char>(c < 0x80 ? std::tolower(c) : c);
        else if (c == ' ')
            a += '-';
    }
    return a;
}

// README.md and the guides it names (the folders' README.md files among its paths).
std::vector<std::string> readme_and_guides() {
    std::vector<std::string> files = {"README.md"};
    for (const std::string& span : code_spans(testutil::read_file("README.md")))
        for (const std::string& word : shell_words(span))
            if (looks_like_path(word) && word.size() > 10 &&
                word.compare(word.size() - 10, 10, "/README.md") == 0 &&
                std::find(files.begin(), files.end(), word) == files.end())
                files.push_back(word);
    return files;
}

}  // namespace

TEST_CASE("readme: every repository path it and its guides name in backticks exists") {
    const std::string gitignore = testutil::read_file(".gitignore");
    const std::vector<std::string> files = readme_and_guides();
    CHECK(files.size() >= 3);  // README.md, chapter 8's guide, cuda/'s guide
    for (const std::string& file : files) {
        // A guide may name a file of its own folder by its name alone.
        const std::filesystem::path root = PROJECT_ROOT, folder = root / file;
        int checked = 0;
        for (const std::string& span : code_spans(testutil::read_file(file)))
            for (const std::string& word : shell_words(span)) {
                if (!looks_like_path(word) || build_output(word, gitignore)) continue;
                checked++;
                CHECK_MESSAGE((std::filesystem::exists(root / word) ||
                               (file != "README.md" &&
                                std::filesystem::exists(folder.parent_path() / word))),
                              file << " names `" << word << "`, which is not in the repository "
                                   << "(write paths from the repository's root)");
            }
        CHECK_MESSAGE(checked > 3, file << " names " << checked << " paths");
    }
}

TEST_CASE("readme: every option it and its guides give a program is one the program lists") {
    int checked = 0;
    for (const std::string& file : readme_and_guides())
        for (const std::string& span : code_spans(testutil::read_file(file))) {
            const std::vector<std::string> words = shell_words(span);
            for (size_t i = 0; i < words.size(); i++) {
                if (words[i].rfind("build/bin/", 0) != 0 || words[i].find('<') != std::string::npos)
                    continue;
                const std::string program = words[i].substr(10);
                if (program.find("cuda") != std::string::npos &&
                    !std::filesystem::exists(std::filesystem::path(PROJECT_BIN) / program)) {
                    MESSAGE(program << " is not built here (CUDA=0): its options not checked");
                    continue;
                }
                const std::string help = testutil::run(program, "--help").out;
                // `build/bin/NAME --option [value] --option ...`, each option as --help names it
                for (size_t j = i + 1; j < words.size() && words[j].rfind("--", 0) == 0; j++) {
                    checked++;
                    CHECK_MESSAGE(help.find("  " + words[j] + " ") != std::string::npos,
                                  file << " gives `" << span << "`: " << program
                                       << " --help lists no " << words[j]);
                    if (j + 1 < words.size() && words[j + 1].rfind("--", 0) != 0) j++;
                }
            }
        }
    CHECK(checked >= 3);
}

TEST_CASE("readme: the make targets it names are the ones make help lists, both ways") {
    const std::set<std::string> targets = help_targets();
    REQUIRE(targets.count("test") == 1);
    REQUIRE(targets.count("ch1") == 1);
    std::set<std::string> in_readme;
    int checked = 0;
    for (const std::string& file : readme_and_guides()) {
        for (const std::string& span : code_spans(testutil::read_file(file))) {
            const std::vector<std::string> words = shell_words(span);
            for (size_t i = 0; i < words.size(); i++) {
                if (words[i] != "make") continue;
                // `make [-j2] [VAR=value ...] target ...`, up to the end of the command.
                for (size_t j = i + 1; j < words.size(); j++) {
                    const std::string& w = words[j];
                    if (w == "|" || w == "&&" || w == ";" || w == "||") break;
                    if (w[0] == '-' || w.find('=') != std::string::npos) continue;
                    checked++;
                    if (file == "README.md") in_readme.insert(w);
                    CHECK_MESSAGE(targets.count(w) == 1,
                                  file << " names `make " << w << "`: make help has no such");
                }
            }
        }
    }
    CHECK(checked > 10);
    for (const std::string& t : targets)
        CHECK_MESSAGE(in_readme.count(t) == 1,
                      "make help lists " << t << ", which README.md does not name");
}

TEST_CASE("readme: its table of contents and the code guide come first, and the links lead on") {
    const std::string readme = testutil::read_file("README.md");
    std::set<std::string> anchors;
    std::vector<std::string> links;
    std::istringstream in(readme);
    int number = 0, contents_line = 0, code_line = 0;
    bool fenced = false;
    for (std::string line; std::getline(in, line);) {
        number++;
        if (line.rfind("```", 0) == 0) fenced = !fenced;
        if (fenced) continue;
        if (line.rfind("## ", 0) == 0 || line.rfind("### ", 0) == 0) {
            anchors.insert(anchor(line.substr(line.find(' ') + 1)));
            if (line == "## Contents") contents_line = number;
            if (line == "## How to read the code") code_line = number;
        }
        for (size_t a = line.find("](#"); a != std::string::npos; a = line.find("](#", a + 1)) {
            const size_t b = line.find(')', a);
            if (b != std::string::npos) links.push_back(line.substr(a + 3, b - a - 3));
        }
    }
    CHECK(contents_line > 0);
    CHECK(contents_line <= 40);
    CHECK(code_line > 0);
    CHECK(code_line <= 80);  // a newcomer reaches it before any detail
    CHECK(!links.empty());
    for (const std::string& l : links)
        CHECK_MESSAGE(anchors.count(l) == 1,
                      "README.md links to #" << l << ", which is no section's anchor");
}

TEST_CASE("readme: its code map names every file of common/, folder by folder") {
    // The map is the reader's guide to the foundation's layers: a file added to common/ or
    // moved between its folders without a line in the map fails here.
    const std::string readme = testutil::read_file("README.md");
    std::set<std::string> named;
    for (const std::string& span : code_spans(readme))
        for (const std::string& word : shell_words(span)) named.insert(word);
    const std::filesystem::path root = std::string(PROJECT_ROOT);
    int files = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / "common")) {
        const std::string ext = e.path().extension().string();
        if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
        files++;
        const std::string rel = std::filesystem::relative(e.path(), root).generic_string();
        CHECK_MESSAGE(named.count(rel) == 1,
                      "README.md's code map does not name `" << rel << "` (add a row for it)");
    }
    CHECK(files > 30);
}
