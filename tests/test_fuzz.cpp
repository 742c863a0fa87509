// Seeded fuzz tests of every parser of a file a user hands the programs: the weights file
// (common/program/serialize), the flash cards' progress file and their deck, and chapter 8's
// kept records. Each starts from a valid file and runs a few hundred mutations of it: a cut at
// every offset, bit flips, size fields and numbers set to values that overflow, control bytes
// and long fields. Every input must either
// load, with values that are what the file says, or be refused with one line that starts with
// the file's name: no crash, no std::bad_alloc, no raw control byte, no line of unbounded length.
// The seed is fixed: a failure repeats.
#include "chapters/7-translate/checkpoint.h"
#include "chapters/7-translate/train.h"
#include "chapters/8-ablations/runs.h"
#include "chapters/8-ablations/machinery/runner.h"
#include "chapters/flashcards/deck.h"
#include "chapters/flashcards/progress.h"
#include "common/program/serialize.h"
#include "tests/util.h"
#include "tests/weights_bytes.h"

#include <algorithm>
#include <cstdint>
#include <climits>
#include <cstring>
#include <iterator>
#include <memory>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using weights_bytes::Builder;

// A message fit for a terminal: one line, no control bytes (C0, DEL, C1), at most `max` bytes.
std::string message_problem(const std::string& msg, size_t max) {
    if (msg.size() > max) return "longer than " + std::to_string(max) + " bytes";
    for (size_t i = 0; i < msg.size(); i++) {
        const unsigned char b = (unsigned char)msg[i];
        if (b < 0x20 || b == 0x7f) return "a raw control byte at " + std::to_string(i);
        if (b == 0xc2 && i + 1 < msg.size() && (unsigned char)msg[i + 1] < 0xa0)
            return "a raw C1 control at " + std::to_string(i);
    }
    return "";
}

// A refusal as every parser must give it: the file's name first, then one terminal-safe line.
void check_refusal(const std::string& msg, const std::string& prefix, size_t max) {
    CHECK_MESSAGE(msg.rfind(prefix, 0) == 0, msg);
    const std::string problem = message_problem(msg, max);
    CHECK_MESSAGE(problem.empty(), problem << ": " << msg.substr(0, 300));
}

// The mutations shared by the three tests.
struct Mutator {
    std::mt19937_64 rng;
    explicit Mutator(uint64_t seed) : rng(seed) {}
    size_t below(size_t n) { return n ? size_t(rng() % n) : 0; }
    std::string flip(std::string s) {
        if (!s.empty()) s[below(s.size())] ^= char(1 << below(8));
        return s;
    }
    std::string insert_control(std::string s) {
        static const char* bytes[] = {"\x00", "\x1b[2J", "\x1b]0;title\x07", "\x07", "\n",
                                      "\r",   "\x7f",    "\xc2\x9b",         "\t", "\xff"};
        const size_t k = below(10);
        s.insert(below(s.size() + 1), std::string(bytes[k], k == 0 ? 1 : std::strlen(bytes[k])));
        return s;
    }
};

// ---- the weights file -------------------------------------------------------------------------

// A valid file of two hyper-parameters and three tensors, and the offsets of its size fields
// (counts, name lengths, ranks, dimensions) with their widths.
struct WeightsBase {
    std::string bytes;
    std::vector<std::pair<size_t, size_t>> sizes;  // (offset, bytes)
    std::vector<size_t> hparam_names;  // offsets of the hyper-parameters' name lengths
    struct Tensor {
        size_t name;               // offset of its name length
        std::vector<size_t> dims;  // offsets of its dimensions
        size_t data, data_bytes;   // where its data starts, how long it is
    };
    std::vector<Tensor> tensors;
};

WeightsBase weights_base() {
    WeightsBase w;
    Builder b;
    auto mark = [&](size_t width) { w.sizes.push_back({b.bytes.size(), width}); };
    b.put<uint32_t>(1);
    mark(4);
    b.put<uint32_t>(2);  // hyper-parameters
    for (const char* name : {"layers", "d_model"}) {
        w.hparam_names.push_back(b.bytes.size());
        mark(2);
        b.name(name).put<int64_t>(4);
    }
    mark(4);
    b.put<uint32_t>(3);  // tensors
    const std::vector<std::pair<std::string, std::vector<int64_t>>> tensors = {
        {"a.weight", {2, 3}}, {"b.bias", {3}}, {"history.loss", {2, 1, 2}}};
    for (const auto& [name, shape] : tensors) {
        WeightsBase::Tensor t;
        t.name = b.bytes.size();
        mark(2);
        b.name(name);
        mark(4);
        b.put<uint32_t>(uint32_t(shape.size()));
        int64_t numel = 1;
        for (int64_t d : shape) {
            mark(8);
            t.dims.push_back(b.bytes.size());
            b.put<int64_t>(d);
            numel *= d;
        }
        t.data = b.bytes.size();
        t.data_bytes = size_t(numel) * 4;
        w.tensors.push_back(t);
        for (int64_t k = 0; k < numel; k++) b.put<float>(0.25f * float(k));
    }
    w.bytes = b.done();
    return w;
}

// Writes a little-endian value of `width` bytes at `offset`.
std::string set_field(std::string s, size_t offset, size_t width, uint64_t v) {
    for (size_t k = 0; k < width; k++) s[offset + k] = char((v >> (8 * k)) & 0xff);
    return s;
}

}  // namespace

TEST_CASE("fuzz: the weights file: cuts, bit flips, overflowing sizes, control bytes") {
    const WeightsBase base = weights_base();
    std::vector<std::pair<std::string, std::string>> inputs;  // (what, bytes)
    for (size_t keep = 0; keep < base.bytes.size(); keep++)
        inputs.push_back({"cut to " + std::to_string(keep), base.bytes.substr(0, keep)});
    Mutator m(29);
    for (int k = 0; k < 120; k++) {
        std::string s = m.flip(base.bytes);
        inputs.push_back(
            {"bit flip " + std::to_string(k), k % 2 ? weights_bytes::rechecksum(s) : s});
    }
    // Every size field set to values whose products or sums wrap, checksum recomputed.
    const uint64_t edges[] = {0,
                              1,
                              0xFFFF,
                              0x7FFFFFFF,
                              0x80000000,
                              0xFFFFFFFF,
                              uint64_t(1) << 32,
                              uint64_t(1) << 62,
                              uint64_t(1) << 63,
                              ~uint64_t(0)};
    for (const auto& [offset, width] : base.sizes)
        for (uint64_t v : edges)
            inputs.push_back({"field at " + std::to_string(offset) + " = " + std::to_string(v),
                              weights_bytes::rechecksum(set_field(base.bytes, offset, width, v))});
    // Shapes whose byte counts wrap to 0 in 64 bits (2^31 x 2^31 floats are 2^64 bytes), with
    // that tensor's data removed, so that a wrapped size check balances. Every pair of
    // dimensions of each tensor of rank 2 or more, set to 2^31 (the others kept or set to 2).
    for (size_t t = 0; t < base.tensors.size(); t++) {
        const WeightsBase::Tensor& T = base.tensors[t];
        for (size_t i = 0; i < T.dims.size(); i++)
            for (size_t j = i + 1; j < T.dims.size(); j++)
                for (uint64_t other : {uint64_t(0), uint64_t(2)}) {
                    std::string s = base.bytes;
                    for (size_t k = 0; k < T.dims.size(); k++)
                        if (k == i || k == j)
                            s = set_field(s, T.dims[k], 8, uint64_t(1) << 31);
                        else if (other)
                            s = set_field(s, T.dims[k], 8, other);
                    s.erase(T.data, T.data_bytes);
                    inputs.push_back({"tensor " + std::to_string(t) + ": dims " +
                                          std::to_string(i) + ", " + std::to_string(j) +
                                          " = 2^31, data removed",
                                      weights_bytes::rechecksum(s)});
                }
    }
    // Control bytes and long runs in the names (their lengths fixed up to match); in half of
    // them the tensor's rank is then corrupt too, so that its error message shows the name.
    for (int k = 0; k < 60; k++) {
        const bool hparam = k % 3 == 0;
        const size_t offset = hparam ? base.hparam_names[m.below(base.hparam_names.size())]
                                     : base.tensors[m.below(base.tensors.size())].name;
        const uint16_t len = uint16_t((unsigned char)base.bytes[offset] |
                                      ((unsigned char)base.bytes[offset + 1] << 8));
        std::string name = m.insert_control(base.bytes.substr(offset + 2, len));
        if (k % 4 == 1) name += std::string(60000, char('a' + k % 26));
        std::string rest = base.bytes.substr(offset + 2 + len);
        if (!hparam && k % 2 == 1) rest = set_field(rest, 0, 4, 9);  // its rank: 9 dims
        std::string s = base.bytes.substr(0, offset) +
                        std::string{char(name.size() & 0xff), char(name.size() >> 8)} + name +
                        rest;
        inputs.push_back({"control bytes in a name " + std::to_string(k),
                          weights_bytes::rechecksum(s)});
    }
    CHECK(inputs.size() >= 300);

    const std::string path = "/tmp/fuzz-weights-" + std::to_string(::getpid()) + ".bin";
    int loaded = 0, refused = 0;
    for (const auto& input : inputs) {
        const auto& [what, bytes] = input;
        CAPTURE(input.first);  // clang 14 cannot capture a binding
        weights_bytes::write_file(path, bytes);
        try {
            serialize::Checkpoint ck = serialize::load(path);
            loaded++;
            // What loaded is what the file holds: its values fit in its bytes (compared by
            // division: a product here could wrap as the loader's once did).
            uint64_t values = 0;
            for (const auto& [name, t] : ck.tensors) {
                CHECK(uint64_t(t.numel()) <= bytes.size() / 4);
                values += std::min<uint64_t>(uint64_t(t.numel()), bytes.size());
            }
            CHECK(values <= bytes.size() / 4);
        } catch (const std::runtime_error& e) {
            refused++;
            check_refusal(e.what(), path + ": ", path.size() + 400);
        } catch (const std::exception& e) {
            FAIL_CHECK("not a one-line refusal: " << e.what());
        }
    }
    std::remove(path.c_str());
    MESSAGE("weights fuzz: " << inputs.size() << " inputs, " << loaded << " loaded, " << refused
                             << " refused");
    CHECK(loaded >= 1);  // the untouched field values (e.g. a rank set to its own value) load
}

namespace {

// ---- the progress file ------------------------------------------------------------------------

// The decimal number s as 64 bits (for comparing with what the parser stored), or -1.
int64_t reference_number(std::string_view s) {
    if (s.empty() || s.size() > 18) return -1;
    int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}

std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    size_t i = 0;
    for (size_t j; (j = s.find(sep, i)) != std::string_view::npos; i = j + 1)
        out.emplace_back(s.substr(i, j - i));
    out.emplace_back(s.substr(i));
    return out;
}

}  // namespace

TEST_CASE("fuzz: the progress file: cuts, bit flips, overflowing numbers, control bytes") {
    cards::Progress p;
    p.session = 12;
    p.cards[1] = {1, cards::Rating::Hard, 12, 3};
    p.cards[4] = {2, cards::Rating::Medium, 9, 1};
    p.cards[17] = {5, cards::Rating::Easy, 2, 40};
    const std::string base = cards::format_progress(p);
    std::vector<std::string> inputs;
    for (size_t keep = 0; keep < base.size(); keep++) inputs.push_back(base.substr(0, keep));
    Mutator m(31);
    for (int k = 0; k < 100; k++) inputs.push_back(m.flip(base));
    for (int k = 0; k < 60; k++) inputs.push_back(m.insert_control(base));
    // Every number set to values beyond 9 digits, some of which wrap to a plausible int.
    std::vector<std::string> lines = split(base, '\n');
    const char* numbers[] = {"4294967297", "4294967298", "9999999999", "2147483648",
                             "1000000000", "999999999",  "18446744073709551617"};
    for (size_t l = 0; l < lines.size(); l++) {
        std::vector<std::string> f = split(lines[l], '\t');
        for (size_t k = 0; k < f.size(); k++) {
            if (reference_number(f[k]) < 0) continue;
            for (const char* n : numbers) {
                std::vector<std::string> g = f;
                g[k] = n;
                std::vector<std::string> out = lines;
                out[l] = g[0];
                for (size_t j = 1; j < g.size(); j++) out[l] += "\t" + g[j];
                std::string text;
                for (size_t j = 0; j < out.size(); j++) text += (j ? "\n" : "") + out[j];
                inputs.push_back(text);
            }
        }
    }
    inputs.push_back(base + "2\t1\t어려움\t1\t" + std::string(3'000'000, '9') + "\n");
    inputs.push_back(base + "2\t1\t" + std::string(100'000, '\x1b') + "\t1\t1\n");
    CHECK(inputs.size() >= 300);

    int loaded = 0, refused = 0;
    for (const std::string& text : inputs) {
        CAPTURE(text.substr(0, 400));
        try {
            cards::Progress got = cards::parse_progress(text, "p.tsv");
            loaded++;
            // The numbers stored are the numbers written (an overflow would wrap them).
            bool in_table = false;
            for (const std::string& line : split(text, '\n')) {
                std::string l = line;
                if (!l.empty() && l.back() == '\r') l.pop_back();
                if (l.empty() || l[0] == '#') continue;  // comments, as the parser skips them
                std::vector<std::string> f = split(l, '\t');
                if (f.size() == 2 && f[0] == "session") {
                    CHECK(reference_number(f[1]) == got.session);
                } else if (l.rfind("card\t", 0) == 0) {
                    in_table = true;
                } else if (in_table && f.size() == 5) {
                    const int64_t card = reference_number(f[0]);
                    REQUIRE(got.cards.count(int(card)));
                    CHECK(card <= 999'999'999);
                    const cards::CardState& st = got.cards.at(int(card));
                    CHECK(reference_number(f[1]) == st.box);
                    CHECK(reference_number(f[3]) == st.rated_in);
                    CHECK(reference_number(f[4]) == st.reviews);
                }
            }
            // And what the program would save from it reads back the same.
            cards::Progress back = cards::parse_progress(cards::format_progress(got), "p.tsv");
            CHECK(cards::format_progress(back) == cards::format_progress(got));
        } catch (const cards::Error& e) {
            refused++;
            check_refusal(e.what(), "p.tsv:", 400);
        } catch (const std::exception& e) {
            FAIL_CHECK("not a one-line refusal: " << e.what());
        }
    }
    MESSAGE("progress fuzz: " << inputs.size() << " inputs, " << loaded << " loaded, " << refused
                              << " refused");
    CHECK(loaded >= 1);
}

TEST_CASE("fuzz: the deck: cuts, bit flips, overflowing card numbers, control bytes") {
    const std::string base =
        "# 덱\n\n소개 문단.\n\n## 1. 첫 질문\n> 이어지는 질문\n\n답의 첫 줄\n- 항목\n\n"
        "실습: `make ch1`\n\n## 2. 둘째 **질문**\n\n`코드` 답\n실습: `make ch2`\n\n"
        "## 3. 셋째\n답\n실습: `make ch3` 끝\n";
    REQUIRE(cards::parse_deck(base, "d.md").cards.size() == 3);
    std::vector<std::string> inputs;
    for (size_t keep = 0; keep < base.size(); keep++) inputs.push_back(base.substr(0, keep));
    Mutator m(33);
    for (int k = 0; k < 80; k++) inputs.push_back(m.flip(base));
    for (int k = 0; k < 60; k++) inputs.push_back(m.insert_control(base));
    // Card numbers that wrap to the expected one in 32 bits (2^32 + n), and other long ones.
    for (int card = 1; card <= 3; card++) {
        const std::string heading = "## " + std::to_string(card) + ".";
        const size_t at = base.find(heading);
        REQUIRE(at != std::string::npos);
        const std::vector<std::string> numbers = {
            std::to_string((int64_t(1) << 32) + card), std::to_string((int64_t(2) << 32) + card),
            "9999999999", "2147483648", "1000000000", "000000000" + std::to_string(card),
            "18446744073709551617"};
        for (const std::string& n : numbers) {
            std::string s = base;
            s.replace(at, heading.size(), "## " + n + ".");
            inputs.push_back(s);
        }
    }
    inputs.push_back(base + "## 4. " + std::string(3'000'000, 'q') + "\n답\n실습: `make ch4`\n");
    inputs.push_back(base + "## 4x " + std::string(100'000, 'q') + "\n");
    CHECK(inputs.size() >= 300);

    int loaded = 0, refused = 0;
    for (const std::string& text : inputs) {
        CAPTURE(text.substr(0, 400));
        try {
            cards::Deck deck = cards::parse_deck(text, "d.md");
            loaded++;
            // Each heading's number, read in 64 bits, is the card's number: 1, 2, 3, ...
            size_t k = 0;
            for (std::string line : split(text, '\n')) {
                // As the parser reads a line: tabs as 4 spaces, the heading text trimmed.
                std::string spaced;
                for (char c : line) spaced += c == '\t' ? std::string("    ") : std::string(1, c);
                if (spaced.rfind("## ", 0) != 0) continue;
                REQUIRE(k < deck.cards.size());
                const std::string_view t = cards::trim(std::string_view(spaced).substr(3));
                const std::string h(t.substr(0, t.find('.')));
                CHECK(reference_number(h) == deck.cards[k].number);
                CHECK(deck.cards[k].number == int(k) + 1);
                k++;
            }
            CHECK(k == deck.cards.size());
        } catch (const cards::Error& e) {
            refused++;
            check_refusal(e.what(), "d.md:", 400);
        } catch (const std::exception& e) {
            FAIL_CHECK("not a one-line refusal: " << e.what());
        }
    }
    MESSAGE("deck fuzz: " << inputs.size() << " inputs, " << loaded << " loaded, " << refused
                          << " refused");
    CHECK(loaded >= 1);
}

// The weights file as chapter 7 reads it (--load): serialize's checks, then the hyper-parameters
// and the parameter count checked against the task before a model is built.
TEST_CASE("fuzz: chapter 7's weights file: hyper-parameters and shapes set to edge values") {
    translate::ModelConfig c;
    c.layers = 1;
    c.d_model = 8;
    c.heads = 2;
    std::unique_ptr<EncoderDecoder> model = translate::make_model(c);
    const std::string path = "/tmp/fuzz-translate-" + std::to_string(::getpid()) + ".bin";
    translate::save_model(path, *model, c, {2.0, 1.5, 1.0});
    const std::string base = testutil::read_file_abs(path);
    // The hyper-parameters' values and every tensor's dimensions, found by walking the file.
    std::vector<size_t> values, dims;
    size_t pos = 12;
    auto u16 = [&](size_t at) {
        return size_t((unsigned char)base[at] | (unsigned char)base[at + 1] << 8);
    };
    auto u32 = [&](size_t at) { return size_t(u16(at) | u16(at + 2) << 16); };
    const size_t nh = u32(pos);
    pos += 4;
    for (size_t i = 0; i < nh; i++) {
        pos += 2 + u16(pos);
        values.push_back(pos);
        pos += 8;
    }
    const size_t nt = u32(pos);
    pos += 4;
    for (size_t i = 0; i < nt; i++) {
        pos += 2 + u16(pos);
        const size_t nd = u32(pos);
        pos += 4;
        size_t numel = 1;
        for (size_t d = 0; d < nd; d++) {
            dims.push_back(pos);
            numel *= size_t(u32(pos));
            pos += 8;
        }
        pos += 4 * numel;
    }
    REQUIRE(pos + 8 == base.size());

    std::vector<std::pair<std::string, std::string>> inputs;
    const int64_t edges[] = {0, 1, -1, 2, 3, 24, 25, 4096, 4097, int64_t(1) << 31,
                             (int64_t(1) << 32) + 8, INT64_MAX, INT64_MIN};
    for (size_t v : values)
        for (int64_t e : edges)
            inputs.push_back({"hyper-parameter at " + std::to_string(v) + " = " +
                                  std::to_string(e),
                              weights_bytes::rechecksum(set_field(base, v, 8, uint64_t(e)))});
    Mutator m(7);
    for (int k = 0; k < 60; k++) {
        const size_t d = dims[m.below(dims.size())];
        const int64_t e = edges[m.below(std::size(edges))];
        inputs.push_back({"dimension at " + std::to_string(d) + " = " + std::to_string(e),
                          weights_bytes::rechecksum(set_field(base, d, 8, uint64_t(e)))});
    }
    for (int k = 0; k < 60; k++) {
        const size_t keep = m.below(base.size());
        inputs.push_back({"cut to " + std::to_string(keep), base.substr(0, keep)});
    }
    for (int k = 0; k < 40; k++)
        inputs.push_back(
            {"bit flip " + std::to_string(k), weights_bytes::rechecksum(m.flip(base))});
    CHECK(inputs.size() >= 200);

    int loaded = 0, refused = 0;
    for (const auto& input : inputs) {
        const auto& [what, bytes] = input;
        CAPTURE(input.first);  // clang 14 cannot capture a binding
        weights_bytes::write_file(path, bytes);
        try {
            translate::Loaded l = translate::load_model(path);
            loaded++;
            CHECK(l.model->num_parameters() == translate::parameter_count(l.config));
            CHECK(uint64_t(l.model->num_parameters()) <= bytes.size() / 4);
        } catch (const std::runtime_error& e) {
            refused++;
            check_refusal(e.what(), path + ": ", path.size() + 400);
        } catch (const std::exception& e) {
            FAIL_CHECK("not a one-line refusal: " << e.what());
        }
    }
    std::remove(path.c_str());
    MESSAGE("chapter 7 weights fuzz: " << inputs.size() << " inputs, " << loaded << " loaded, "
                                       << refused << " refused");
    CHECK(loaded >= 1);
}

// ---- chapter 8's kept records -----------------------------------------------------------------

TEST_CASE("fuzz: chapter 8's kept record: cuts, bit flips, counts and values out of range") {
    // A real record: the neighbour run nb-1, seed 0, 10 steps; its job's own check judges.
    const std::vector<ablations::Job> jobs = ablations::all_jobs(0.01, {0});
    const ablations::Job* job = nullptr;
    for (const ablations::Job& j : jobs)
        if (j.name == "nb-1/0") job = &j;
    REQUIRE(job);
    ablations::Progress quiet;
    const ablations::Record record = job->run(quiet);
    const std::string base = ablations::format_record(record);
    std::vector<std::string> inputs;
    for (size_t keep = 0; keep <= base.size(); keep++) inputs.push_back(base.substr(0, keep));
    Mutator m(47);
    for (int k = 0; k < 150; k++) inputs.push_back(m.flip(base));
    for (int k = 0; k < 60; k++) inputs.push_back(m.insert_control(base));
    // Every line's count and every value set to what overflows or reads as something else.
    const std::vector<std::string> lines = split(base, '\n');
    const char* counts[] = {"0", "-1", "2", "4294967297", "9223372036854775808",
                            "18446744073709551617", "1e3", "0x10", " 1"};
    const char* numbers[] = {"nan", "-nan", "inf", "-inf", "1e400", "-0", "0x1p3", "1e-400",
                             "101", "-1", "9.5", "4294967296", "", "1,5", "١"};
    for (size_t l = 0; l < lines.size(); l++) {
        const std::vector<std::string> f = split(lines[l], ' ');
        if (f.size() < 3) continue;  // END
        auto with = [&](size_t field, const std::string& value) {
            std::vector<std::string> g = f;
            g[field] = value;
            std::string line = g[0];
            for (size_t j = 1; j < g.size(); j++) line += " " + g[j];
            std::string text;
            for (size_t j = 0; j < lines.size(); j++)
                if (!lines[j].empty()) text += (j == l ? line : lines[j]) + "\n";
            return text;
        };
        for (const char* c : counts) inputs.push_back(with(2, c));
        for (size_t k = 3; k < std::min<size_t>(f.size(), 5); k++)
            for (const char* n : numbers) inputs.push_back(with(k, n));
        inputs.push_back(with(1, std::string(100'000, 'x')));  // a name past any bound
        inputs.push_back(with(1, "exact\x1b[2J"));
        inputs.push_back(with(1, "exact"));  // a key given twice
    }
    inputs.push_back(base + "R extra 1 1\n");  // after END
    inputs.push_back("R loss 100000000 " + std::string(3'000'000, '9') + "\nEND\n");
    CHECK(inputs.size() >= 500);

    const std::string path = "/tmp/fuzz-kept-" + std::to_string(::getpid()) + ".rec";
    int taken = 0, refused = 0;
    for (const std::string& text : inputs) {
        CAPTURE(text.substr(0, 300));
        {
            std::ofstream f(path, std::ios::binary | std::ios::trunc);
            f << text;
        }
        ablations::Record got;
        std::string problem;
        bool special = true;
        const bool ok = ablations::read_kept(path, *job, got, problem, special);
        CHECK_FALSE(special);
        if (ok) {
            taken++;
            CHECK(problem.empty());
            CHECK(job->check(got) == "");
            // What is taken is what the file says, value for value (read here by splitting).
            for (const std::string& line : split(text, '\n')) {
                const std::vector<std::string> f = split(line, ' ');
                if (f.size() < 3 || f[0] != "R") continue;
                const std::vector<double>& v = got.get(f[1]);
                REQUIRE(v.size() + 3 == f.size());
                for (size_t i = 0; i < v.size(); i++) {
                    const double want = std::strtod(f[i + 3].c_str(), nullptr);
                    CHECK((v[i] == want || (std::isnan(v[i]) && std::isnan(want))));
                }
            }
        } else {
            refused++;
            // As run_jobs says it: the file's name, then one terminal-safe line.
            check_refusal(path + ": " + problem + "; nb-1/0 is trained again", path + ": ", 400);
            CHECK_FALSE(problem.empty());
        }
    }
    std::remove(path.c_str());
    MESSAGE("kept-record fuzz: " << inputs.size() << " inputs, " << taken << " taken, "
                                 << refused << " refused");
    CHECK(taken >= 1);
}
