#include "common/program/terminal.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <stdexcept>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

namespace term {

// ---- text width ---------------------------------------------------------------------------

namespace {

struct Range {
    char32_t first, last;
};

// Zero-width: Unicode 14's nonspacing and enclosing marks (Mn, Me) and format characters (Cf:
// zero-width spaces and joiners, bidi marks and isolates, tags) but the prepended concatenation
// marks (U+0600-U+0605, ...), which show; the Hangul conjoining vowels and finals (they merge
// into the preceding initial consonant); the line and paragraph separators.
constexpr Range ZERO_WIDTH[] = {
    {0x0300, 0x036F},   {0x0483, 0x0489},   {0x0591, 0x05BD},   {0x05BF, 0x05BF},
    {0x05C1, 0x05C2},   {0x05C4, 0x05C5},   {0x05C7, 0x05C7},   {0x0610, 0x061A},
    {0x061C, 0x061C},   {0x064B, 0x065F},   {0x0670, 0x0670},   {0x06D6, 0x06DC},
    {0x06DF, 0x06E4},   {0x06E7, 0x06E8},   {0x06EA, 0x06ED},   {0x0711, 0x0711},
    {0x0730, 0x074A},   {0x07A6, 0x07B0},   {0x07EB, 0x07F3},   {0x07FD, 0x07FD},
    {0x0816, 0x0819},   {0x081B, 0x0823},   {0x0825, 0x0827},   {0x0829, 0x082D},
    {0x0859, 0x085B},   {0x0898, 0x089F},   {0x08CA, 0x08E1},   {0x08E3, 0x0902},
    {0x093A, 0x093A},   {0x093C, 0x093C},   {0x0941, 0x0948},   {0x094D, 0x094D},
    {0x0951, 0x0957},   {0x0962, 0x0963},   {0x0981, 0x0981},   {0x09BC, 0x09BC},
    {0x09C1, 0x09C4},   {0x09CD, 0x09CD},   {0x09E2, 0x09E3},   {0x09FE, 0x09FE},
    {0x0A01, 0x0A02},   {0x0A3C, 0x0A3C},   {0x0A41, 0x0A42},   {0x0A47, 0x0A48},
    {0x0A4B, 0x0A4D},   {0x0A51, 0x0A51},   {0x0A70, 0x0A71},   {0x0A75, 0x0A75},
    {0x0A81, 0x0A82},   {0x0ABC, 0x0ABC},   {0x0AC1, 0x0AC5},   {0x0AC7, 0x0AC8},
    {0x0ACD, 0x0ACD},   {0x0AE2, 0x0AE3},   {0x0AFA, 0x0AFF},   {0x0B01, 0x0B01},
    {0x0B3C, 0x0B3C},   {0x0B3F, 0x0B3F},   {0x0B41, 0x0B44},   {0x0B4D, 0x0B4D},
    {0x0B55, 0x0B56},   {0x0B62, 0x0B63},   {0x0B82, 0x0B82},   {0x0BC0, 0x0BC0},
    {0x0BCD, 0x0BCD},   {0x0C00, 0x0C00},   {0x0C04, 0x0C04},   {0x0C3C, 0x0C3C},
    {0x0C3E, 0x0C40},   {0x0C46, 0x0C48},   {0x0C4A, 0x0C4D},   {0x0C55, 0x0C56},
    {0x0C62, 0x0C63},   {0x0C81, 0x0C81},   {0x0CBC, 0x0CBC},   {0x0CBF, 0x0CBF},
    {0x0CC6, 0x0CC6},   {0x0CCC, 0x0CCD},   {0x0CE2, 0x0CE3},   {0x0D00, 0x0D01},
    {0x0D3B, 0x0D3C},   {0x0D41, 0x0D44},   {0x0D4D, 0x0D4D},   {0x0D62, 0x0D63},
    {0x0D81, 0x0D81},   {0x0DCA, 0x0DCA},   {0x0DD2, 0x0DD4},   {0x0DD6, 0x0DD6},
    {0x0E31, 0x0E31},   {0x0E34, 0x0E3A},   {0x0E47, 0x0E4E},   {0x0EB1, 0x0EB1},
    {0x0EB4, 0x0EBC},   {0x0EC8, 0x0ECD},   {0x0F18, 0x0F19},   {0x0F35, 0x0F35},
    {0x0F37, 0x0F37},   {0x0F39, 0x0F39},   {0x0F71, 0x0F7E},   {0x0F80, 0x0F84},
    {0x0F86, 0x0F87},   {0x0F8D, 0x0F97},   {0x0F99, 0x0FBC},   {0x0FC6, 0x0FC6},
    {0x102D, 0x1030},   {0x1032, 0x1037},   {0x1039, 0x103A},   {0x103D, 0x103E},
    {0x1058, 0x1059},   {0x105E, 0x1060},   {0x1071, 0x1074},   {0x1082, 0x1082},
    {0x1085, 0x1086},   {0x108D, 0x108D},   {0x109D, 0x109D},   {0x1160, 0x11FF},
    {0x135D, 0x135F},   {0x1712, 0x1714},   {0x1732, 0x1733},   {0x1752, 0x1753},
    {0x1772, 0x1773},   {0x17B4, 0x17B5},   {0x17B7, 0x17BD},   {0x17C6, 0x17C6},
    {0x17C9, 0x17D3},   {0x17DD, 0x17DD},   {0x180B, 0x180F},   {0x1885, 0x1886},
    {0x18A9, 0x18A9},   {0x1920, 0x1922},   {0x1927, 0x1928},   {0x1932, 0x1932},
    {0x1939, 0x193B},   {0x1A17, 0x1A18},   {0x1A1B, 0x1A1B},   {0x1A56, 0x1A56},
    {0x1A58, 0x1A5E},   {0x1A60, 0x1A60},   {0x1A62, 0x1A62},   {0x1A65, 0x1A6C},
    {0x1A73, 0x1A7C},   {0x1A7F, 0x1A7F},   {0x1AB0, 0x1ACE},   {0x1B00, 0x1B03},
    {0x1B34, 0x1B34},   {0x1B36, 0x1B3A},   {0x1B3C, 0x1B3C},   {0x1B42, 0x1B42},
    {0x1B6B, 0x1B73},   {0x1B80, 0x1B81},   {0x1BA2, 0x1BA5},   {0x1BA8, 0x1BA9},
    {0x1BAB, 0x1BAD},   {0x1BE6, 0x1BE6},   {0x1BE8, 0x1BE9},   {0x1BED, 0x1BED},
    {0x1BEF, 0x1BF1},   {0x1C2C, 0x1C33},   {0x1C36, 0x1C37},   {0x1CD0, 0x1CD2},
    {0x1CD4, 0x1CE0},   {0x1CE2, 0x1CE8},   {0x1CED, 0x1CED},   {0x1CF4, 0x1CF4},
    {0x1CF8, 0x1CF9},   {0x1DC0, 0x1DFF},   {0x200B, 0x200F},   {0x2028, 0x202E},
    {0x2060, 0x2064},   {0x2066, 0x206F},   {0x20D0, 0x20F0},   {0x2CEF, 0x2CF1},
    {0x2D7F, 0x2D7F},   {0x2DE0, 0x2DFF},   {0x302A, 0x302D},   {0x3099, 0x309A},
    {0xA66F, 0xA672},   {0xA674, 0xA67D},   {0xA69E, 0xA69F},   {0xA6F0, 0xA6F1},
    {0xA802, 0xA802},   {0xA806, 0xA806},   {0xA80B, 0xA80B},   {0xA825, 0xA826},
    {0xA82C, 0xA82C},   {0xA8C4, 0xA8C5},   {0xA8E0, 0xA8F1},   {0xA8FF, 0xA8FF},
    {0xA926, 0xA92D},   {0xA947, 0xA951},   {0xA980, 0xA982},   {0xA9B3, 0xA9B3},
    {0xA9B6, 0xA9B9},   {0xA9BC, 0xA9BD},   {0xA9E5, 0xA9E5},   {0xAA29, 0xAA2E},
    {0xAA31, 0xAA32},   {0xAA35, 0xAA36},   {0xAA43, 0xAA43},   {0xAA4C, 0xAA4C},
    {0xAA7C, 0xAA7C},   {0xAAB0, 0xAAB0},   {0xAAB2, 0xAAB4},   {0xAAB7, 0xAAB8},
    {0xAABE, 0xAABF},   {0xAAC1, 0xAAC1},   {0xAAEC, 0xAAED},   {0xAAF6, 0xAAF6},
    {0xABE5, 0xABE5},   {0xABE8, 0xABE8},   {0xABED, 0xABED},   {0xD7B0, 0xD7FF},
    {0xFB1E, 0xFB1E},   {0xFE00, 0xFE0F},   {0xFE20, 0xFE2F},   {0xFEFF, 0xFEFF},
    {0xFFF9, 0xFFFB},   {0x101FD, 0x101FD}, {0x102E0, 0x102E0}, {0x10376, 0x1037A},
    {0x10A01, 0x10A03}, {0x10A05, 0x10A06}, {0x10A0C, 0x10A0F}, {0x10A38, 0x10A3A},
    {0x10A3F, 0x10A3F}, {0x10AE5, 0x10AE6}, {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC},
    {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11001, 0x11001}, {0x11038, 0x11046},
    {0x11070, 0x11070}, {0x11073, 0x11074}, {0x1107F, 0x11081}, {0x110B3, 0x110B6},
    {0x110B9, 0x110BA}, {0x110C2, 0x110C2}, {0x11100, 0x11102}, {0x11127, 0x1112B},
    {0x1112D, 0x11134}, {0x11173, 0x11173}, {0x11180, 0x11181}, {0x111B6, 0x111BE},
    {0x111C9, 0x111CC}, {0x111CF, 0x111CF}, {0x1122F, 0x11231}, {0x11234, 0x11234},
    {0x11236, 0x11237}, {0x1123E, 0x1123E}, {0x112DF, 0x112DF}, {0x112E3, 0x112EA},
    {0x11300, 0x11301}, {0x1133B, 0x1133C}, {0x11340, 0x11340}, {0x11366, 0x1136C},
    {0x11370, 0x11374}, {0x11438, 0x1143F}, {0x11442, 0x11444}, {0x11446, 0x11446},
    {0x1145E, 0x1145E}, {0x114B3, 0x114B8}, {0x114BA, 0x114BA}, {0x114BF, 0x114C0},
    {0x114C2, 0x114C3}, {0x115B2, 0x115B5}, {0x115BC, 0x115BD}, {0x115BF, 0x115C0},
    {0x115DC, 0x115DD}, {0x11633, 0x1163A}, {0x1163D, 0x1163D}, {0x1163F, 0x11640},
    {0x116AB, 0x116AB}, {0x116AD, 0x116AD}, {0x116B0, 0x116B5}, {0x116B7, 0x116B7},
    {0x1171D, 0x1171F}, {0x11722, 0x11725}, {0x11727, 0x1172B}, {0x1182F, 0x11837},
    {0x11839, 0x1183A}, {0x1193B, 0x1193C}, {0x1193E, 0x1193E}, {0x11943, 0x11943},
    {0x119D4, 0x119D7}, {0x119DA, 0x119DB}, {0x119E0, 0x119E0}, {0x11A01, 0x11A0A},
    {0x11A33, 0x11A38}, {0x11A3B, 0x11A3E}, {0x11A47, 0x11A47}, {0x11A51, 0x11A56},
    {0x11A59, 0x11A5B}, {0x11A8A, 0x11A96}, {0x11A98, 0x11A99}, {0x11C30, 0x11C36},
    {0x11C38, 0x11C3D}, {0x11C3F, 0x11C3F}, {0x11C92, 0x11CA7}, {0x11CAA, 0x11CB0},
    {0x11CB2, 0x11CB3}, {0x11CB5, 0x11CB6}, {0x11D31, 0x11D36}, {0x11D3A, 0x11D3A},
    {0x11D3C, 0x11D3D}, {0x11D3F, 0x11D45}, {0x11D47, 0x11D47}, {0x11D90, 0x11D91},
    {0x11D95, 0x11D95}, {0x11D97, 0x11D97}, {0x11EF3, 0x11EF4}, {0x13430, 0x13438},
    {0x16AF0, 0x16AF4}, {0x16B30, 0x16B36}, {0x16F4F, 0x16F4F}, {0x16F8F, 0x16F92},
    {0x16FE4, 0x16FE4}, {0x1BC9D, 0x1BC9E}, {0x1BCA0, 0x1BCA3}, {0x1CF00, 0x1CF2D},
    {0x1CF30, 0x1CF46}, {0x1D167, 0x1D169}, {0x1D173, 0x1D182}, {0x1D185, 0x1D18B},
    {0x1D1AA, 0x1D1AD}, {0x1D242, 0x1D244}, {0x1DA00, 0x1DA36}, {0x1DA3B, 0x1DA6C},
    {0x1DA75, 0x1DA75}, {0x1DA84, 0x1DA84}, {0x1DA9B, 0x1DA9F}, {0x1DAA1, 0x1DAAF},
    {0x1E000, 0x1E006}, {0x1E008, 0x1E018}, {0x1E01B, 0x1E021}, {0x1E023, 0x1E024},
    {0x1E026, 0x1E02A}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF},
    {0x1E8D0, 0x1E8D6}, {0x1E944, 0x1E94A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
    {0xE0100, 0xE01EF},
};

// Two columns: Hangul (jamo initials, compatibility jamo, syllables), CJK ideographs, kana,
// fullwidth forms and the emoji blocks terminals draw wide.
constexpr Range DOUBLE_WIDTH[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
    {0x23F0, 0x23F0},   {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},
    {0x2648, 0x2653},   {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},
    {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},
    {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},
    {0x2728, 0x2728},   {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},
    {0x2757, 0x2757},   {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},
    {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x303E},
    {0x3041, 0x3096},   {0x309B, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},
    {0xA000, 0xA4CF},   {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
    {0xFE10, 0xFE19},   {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},
    {0x16FE0, 0x16FE4}, {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004},
    {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F251},
    {0x1F300, 0x1F320}, {0x1F32D, 0x1F335}, {0x1F337, 0x1F37C}, {0x1F37E, 0x1F393},
    {0x1F3A0, 0x1F3CA}, {0x1F3CF, 0x1F3D3}, {0x1F3E0, 0x1F3F0}, {0x1F3F4, 0x1F3F4},
    {0x1F3F8, 0x1F43E}, {0x1F440, 0x1F440}, {0x1F442, 0x1F4FC}, {0x1F4FF, 0x1F53D},
    {0x1F54B, 0x1F54E}, {0x1F550, 0x1F567}, {0x1F57A, 0x1F57A}, {0x1F595, 0x1F596},
    {0x1F5A4, 0x1F5A4}, {0x1F5FB, 0x1F64F}, {0x1F680, 0x1F6C5}, {0x1F6CC, 0x1F6CC},
    {0x1F6D0, 0x1F6D2}, {0x1F6D5, 0x1F6D7}, {0x1F6EB, 0x1F6EC}, {0x1F6F4, 0x1F6FC},
    {0x1F7E0, 0x1F7EB}, {0x1F90C, 0x1F93A}, {0x1F93C, 0x1F945}, {0x1F947, 0x1F9FF},
    {0x1FA70, 0x1FAFF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

template <size_t N>
bool in(const Range (&table)[N], char32_t c) {
    // Binary search over sorted, disjoint ranges.
    size_t lo = 0, hi = N;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < table[mid].first)
            hi = mid;
        else if (c > table[mid].last)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

}  // namespace

int codepoint_width(char32_t c) {
    if (c == 0) return 0;
    if (c < 0x20 || (c >= 0x7F && c < 0xA0)) return -1;
    if (c < 0x300) return 1;  // the common case: ASCII and Latin-1
    if (in(ZERO_WIDTH, c)) return 0;
    if (in(DOUBLE_WIDTH, c)) return 2;
    return 1;
}

bool decode_utf8(std::string_view s, size_t& i, char32_t& c) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char b0 = byte(i);
    int len;
    char32_t min;
    if (b0 < 0x80) {
        c = b0;
        i += 1;
        return true;
    } else if ((b0 & 0xE0) == 0xC0) {
        len = 2, min = 0x80, c = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
        len = 3, min = 0x800, c = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
        len = 4, min = 0x10000, c = b0 & 0x07;
    } else {
        i += 1;
        return false;
    }
    if (i + len > s.size()) {
        i += 1;
        return false;
    }
    for (int k = 1; k < len; k++) {
        unsigned char b = byte(i + k);
        if ((b & 0xC0) != 0x80) {
            i += 1;
            return false;
        }
        c = (c << 6) | (b & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
        i += 1;
        return false;
    }
    i += len;
    return true;
}

bool valid_utf8(std::string_view s) {
    size_t i = 0;
    char32_t c;
    while (i < s.size())
        if (!decode_utf8(s, i, c)) return false;
    return true;
}

int display_width(std::string_view s) {
    int w = 0;
    size_t i = 0;
    char32_t c;
    while (i < s.size()) {
        if (!decode_utf8(s, i, c)) {
            w += 1;
            continue;
        }
        int cw = codepoint_width(c);
        w += cw < 0 ? 1 : cw;
    }
    return w;
}

namespace {

// Splits a word wider than `width` into pieces of at most `width` columns.
std::vector<std::string> cut_word(std::string_view word, int width) {
    std::vector<std::string> pieces(1);
    int w = 0;
    size_t i = 0;
    while (i < word.size()) {
        size_t start = i;
        char32_t c;
        decode_utf8(word, i, c);
        int cw = display_width(word.substr(start, i - start));
        if (w + cw > width && w > 0) {
            pieces.emplace_back();
            w = 0;
        }
        pieces.back().append(word.substr(start, i - start));
        w += cw;
    }
    return pieces;
}

void wrap_line(std::string_view line, int width, std::vector<std::string>& out) {
    // Leading spaces stay as an indent; a list item "- " hangs its continuation lines.
    size_t lead = line.find_first_not_of(' ');
    if (lead == std::string_view::npos) {
        out.emplace_back();
        return;
    }
    int indent = int(lead);
    bool bullet = line.substr(lead).rfind("- ", 0) == 0;
    int hang = indent + (bullet ? 2 : 0);
    // A narrow window drops the indent to keep the text, and always leaves room for a wide
    // character (two columns).
    if (hang > width / 2 || width - hang < 2) indent = hang = 0;
    std::string prefix_first(indent, ' '), prefix_rest(hang, ' ');

    std::vector<std::string_view> words;
    size_t i = lead;
    while (i < line.size()) {
        size_t j = line.find(' ', i);
        if (j == std::string_view::npos) j = line.size();
        if (j > i) words.push_back(line.substr(i, j - i));
        i = j + 1;
    }

    std::string cur = prefix_first;
    int cur_w = indent;
    bool empty = true;  // nothing but the prefix on the current line
    for (std::string_view word : words) {
        int w = display_width(word);
        if (!empty && cur_w + 1 + w <= width) {
            cur += ' ';
            cur.append(word);
            cur_w += 1 + w;
            continue;
        }
        if (!empty) {
            out.push_back(cur);
            cur = prefix_rest;
            cur_w = hang;
        }
        if (cur_w + w <= width) {
            cur.append(word);
            cur_w += w;
        } else {
            // Wider than a whole line: cut it between code points.
            std::vector<std::string> pieces = cut_word(word, width - cur_w);
            for (size_t k = 0; k + 1 < pieces.size(); k++) {
                out.push_back(cur + pieces[k]);
                cur = prefix_rest;
                cur_w = hang;
            }
            cur += pieces.back();
            cur_w += display_width(pieces.back());
        }
        empty = false;
    }
    out.push_back(cur);
}

}  // namespace

std::vector<std::string> wrap(std::string_view text, int width) {
    width = std::max(width, 2);  // a wide character needs two columns
    std::vector<std::string> out;
    size_t i = 0;
    while (true) {
        size_t j = text.find('\n', i);
        std::string_view line = text.substr(i, j == std::string_view::npos ? j : j - i);
        wrap_line(line, width, out);
        if (j == std::string_view::npos) break;
        i = j + 1;
    }
    return out;
}

std::string pad_right(std::string_view s, int width) {
    return std::string(s) + std::string(size_t(std::max(0, width - display_width(s))), ' ');
}

std::string pad_left(std::string_view s, int width) {
    return std::string(size_t(std::max(0, width - display_width(s))), ' ') + std::string(s);
}

std::string fit(std::string_view s, int width) {
    if (width <= 0) return "";
    int w = display_width(s);
    if (w <= width) return std::string(s) + std::string(width - w, ' ');
    // Cut at a code point so that the text plus "..." fills the width.
    const int dots = std::min(3, width);
    std::string out;
    int used = 0;
    size_t i = 0;
    while (i < s.size()) {
        size_t start = i;
        char32_t c;
        decode_utf8(s, i, c);
        int cw = display_width(s.substr(start, i - start));
        if (used + cw > width - dots) break;
        out.append(s.substr(start, i - start));
        used += cw;
    }
    out.append(std::string(dots, '.'));
    used += dots;
    return out + std::string(width - used, ' ');
}

std::string fit_first(const std::vector<std::string_view>& texts, int width) {
    for (std::string_view t : texts)
        if (display_width(t) <= width) return fit(t, width);
    return fit(texts.empty() ? "" : texts.back(), width);
}

// ---- keys ---------------------------------------------------------------------------------

size_t parse_key(std::string_view buf, Key& out) {
    out = Key{};
    if (buf.empty()) return 0;
    unsigned char b0 = static_cast<unsigned char>(buf[0]);
    if (b0 == 0x1B) {
        if (buf.size() == 1) return 0;  // a lone ESC, or the start of a sequence
        if (buf[1] == 'O') {            // SS3: arrows in "application cursor" mode
            if (buf.size() < 3) return 0;
            switch (buf[2]) {
                case 'A': out.kind = KeyKind::Up; break;
                case 'B': out.kind = KeyKind::Down; break;
                case 'C': out.kind = KeyKind::Right; break;
                case 'D': out.kind = KeyKind::Left; break;
                case 'H': out.kind = KeyKind::Home; break;
                case 'F': out.kind = KeyKind::End; break;
                default: out.kind = KeyKind::Unknown;
            }
            return 3;
        }
        if (buf[1] != '[') {
            out.kind = KeyKind::Escape;
            return 1;
        }
        // CSI: parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F, one final 0x40-0x7E.
        size_t k = 2;
        while (k < buf.size() && static_cast<unsigned char>(buf[k]) >= 0x20 &&
               static_cast<unsigned char>(buf[k]) <= 0x3F)
            k++;
        if (k >= buf.size()) {
            if (buf.size() > 64) {  // not a sequence we will ever complete
                out.kind = KeyKind::Unknown;
                return buf.size();
            }
            return 0;
        }
        char final = buf[k];
        std::string_view params = buf.substr(2, k - 2);
        size_t used = k + 1;
        if (static_cast<unsigned char>(final) < 0x40 || static_cast<unsigned char>(final) > 0x7E) {
            out.kind = KeyKind::Unknown;  // a broken sequence: drop what we looked at
            return used;
        }
        if (!params.empty() && params[0] == '<' && (final == 'M' || final == 'm')) {
            // SGR mouse: "<button;column;row" then M (press) or m (release).
            int v[3] = {0, 0, 0}, n = 0;
            bool ok = true;
            std::string_view p = params.substr(1);
            for (size_t a = 0; a <= p.size() && ok; n++) {
                size_t b = p.find(';', a);
                if (b == std::string_view::npos) b = p.size();
                if (n >= 3 || b == a || b - a > 6) ok = false;
                for (size_t t = a; ok && t < b; t++)
                    if (p[t] < '0' || p[t] > '9')
                        ok = false;
                    else
                        v[n] = v[n] * 10 + (p[t] - '0');
                a = b + 1;
            }
            if (!ok || n != 3) {
                out.kind = KeyKind::Unknown;
                return used;
            }
            out.kind = KeyKind::Mouse;
            out.button = v[0] & ~(4 | 8 | 16);  // drop the shift / alt / ctrl bits
            out.x = v[1];
            out.y = v[2];
            out.press = final == 'M';
            return used;
        }
        // Arrows may carry modifiers ("1;5C" for Ctrl+Right): the final byte decides.
        std::string_view first = params.substr(0, params.find(';'));
        switch (final) {
            case 'A': out.kind = KeyKind::Up; break;
            case 'B': out.kind = KeyKind::Down; break;
            case 'C': out.kind = KeyKind::Right; break;
            case 'D': out.kind = KeyKind::Left; break;
            case 'H': out.kind = KeyKind::Home; break;
            case 'F': out.kind = KeyKind::End; break;
            case '~':
                if (first == "5")
                    out.kind = KeyKind::PageUp;
                else if (first == "6")
                    out.kind = KeyKind::PageDown;
                else if (first == "1" || first == "7")
                    out.kind = KeyKind::Home;
                else if (first == "4" || first == "8")
                    out.kind = KeyKind::End;
                else
                    out.kind = KeyKind::Unknown;
                break;
            default: out.kind = KeyKind::Unknown;
        }
        return used;
    }
    if (b0 == '\r' || b0 == '\n') {
        out.kind = KeyKind::Enter;
        return 1;
    }
    if (b0 == ' ') {
        out.kind = KeyKind::Space;
        return 1;
    }
    if (b0 == 0x03 || b0 == 0x04) {  // Ctrl-C (when ISIG is off), Ctrl-D (the end of input)
        out.kind = b0 == 0x03 ? KeyKind::CtrlC : KeyKind::CtrlD;
        return 1;
    }
    if (b0 < 0x20 || b0 == 0x7F) {
        out.kind = KeyKind::Unknown;
        return 1;
    }
    // A UTF-8 character; it may be split across two reads.
    int len = b0 < 0x80             ? 1
              : (b0 & 0xE0) == 0xC0 ? 2
              : (b0 & 0xF0) == 0xE0 ? 3
              : (b0 & 0xF8) == 0xF0 ? 4
                                    : 1;
    if (size_t(len) > buf.size()) {
        bool continuation = true;
        for (size_t k = 1; k < buf.size(); k++)
            continuation &= (static_cast<unsigned char>(buf[k]) & 0xC0) == 0x80;
        if (continuation) return 0;
    }
    size_t i = 0;
    char32_t c;
    if (!decode_utf8(buf, i, c)) {
        out.kind = KeyKind::Unknown;
        return 1;
    }
    out.kind = KeyKind::Char;
    out.ch = c;
    return i;
}

// ---- raw mode -----------------------------------------------------------------------------

void window_size(int& rows, int& cols, int fd) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
        rows = ws.ws_row;
        cols = ws.ws_col;
    } else {
        rows = 24;
        cols = 80;
    }
}

ProgressLine::ProgressLine(int fd) : fd_(fd), active_(::isatty(fd) == 1) {}

void ProgressLine::show(std::string_view line) {
    if (!active_) return;
    int rows, cols;
    window_size(rows, cols, fd_);
    // One column short of the width: a line that reaches the last column wraps on some
    // terminals, and the next "\r" would then rewrite the second row, not this one.
    const int width = std::max(10, cols - 1);
    std::string out = "\r\033[K";
    out += display_width(line) <= width ? std::string(line) : fit(line, width);
    for (size_t done = 0; done < out.size();) {
        const ssize_t n = ::write(fd_, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // a terminal that went away: progress is not worth an error
        done += size_t(n);
    }
    shown_ = true;
}

void ProgressLine::clear() {
    if (!active_ || !shown_) return;
    static constexpr char ERASE[] = "\r\033[K";
    while (::write(fd_, ERASE, sizeof ERASE - 1) < 0 && errno == EINTR) {
    }
    shown_ = false;
}

namespace {

// Everything the signal handlers touch: plain data, written before the handlers are installed.
termios g_saved{}, g_raw{};
volatile sig_atomic_t g_active = 0;    // the terminal is in raw mode right now
volatile sig_atomic_t g_wanted = 0;    // a Raw object is entered (raw mode again after SIGCONT)
volatile sig_atomic_t g_resized = 0;
char g_enter_seq[64];
size_t g_enter_len = 0;

// Leave mouse reporting, show the cursor, leave the alternate screen.
constexpr char LEAVE_SEQ[] = "\x1b[?1006l\x1b[?1000l\x1b[0m\x1b[?25h\x1b[?1049l";

void write_all(const char* p, size_t n) {
    while (n > 0) {
        ssize_t k = ::write(STDOUT_FILENO, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return;
        }
        p += k;
        n -= size_t(k);
    }
}

// Async-signal-safe: write(2) and tcsetattr(3) only.
void restore_now() {
    if (!g_active) return;
    g_active = 0;
    write_all(LEAVE_SEQ, sizeof LEAVE_SEQ - 1);
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved);
}

void reenter_now() {
    if (g_active || !g_wanted) return;
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_raw);
    write_all(g_enter_seq, g_enter_len);
    g_active = 1;
}

void install(int sig, void (*handler)(int)) {
    struct sigaction sa{};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR so the loop can redraw
    ::sigaction(sig, &sa, nullptr);
}

void on_fatal(int sig) {
    restore_now();
    // Die of the same signal (the shell then reports it as usual); it is delivered as soon as
    // this handler returns, because the signal is blocked while its handler runs.
    install(sig, SIG_DFL);
    ::raise(sig);
}

void on_stop(int) {
    restore_now();
    install(SIGTSTP, SIG_DFL);
    ::raise(SIGTSTP);
}

void on_cont(int) {
    install(SIGTSTP, on_stop);
    reenter_now();
    g_resized = 1;
}

void on_winch(int) { g_resized = 1; }

void restore_at_exit() { restore_now(); }

}  // namespace

bool Raw::take_resized() {
    bool r = g_resized != 0;
    g_resized = 0;
    return r;
}

void Raw::enter(bool mouse) {
    if (active_) return;
    if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO))
        throw std::runtime_error("raw mode needs a terminal on stdin and stdout");
    if (::tcgetattr(STDIN_FILENO, &g_saved) != 0)
        throw std::runtime_error(std::string("tcgetattr: ") + std::strerror(errno));
    g_raw = g_saved;
    // Like cfmakeraw, but ISIG stays on: Ctrl-C raises SIGINT, whose handler restores the screen.
    g_raw.c_iflag &= ~tcflag_t(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    g_raw.c_lflag &= ~tcflag_t(ECHO | ECHONL | ICANON | IEXTEN);
    g_raw.c_cflag |= CS8;
    g_raw.c_cc[VMIN] = 1;
    g_raw.c_cc[VTIME] = 0;

    std::string seq = "\x1b[?1049h\x1b[?25l\x1b[2J";  // alternate screen, hide cursor, clear
    if (mouse) seq += "\x1b[?1000h\x1b[?1006h";        // clicks, reported as SGR sequences
    std::memcpy(g_enter_seq, seq.data(), seq.size());
    g_enter_len = seq.size();

    static bool registered = false;
    if (!registered) {
        std::atexit(restore_at_exit);  // std::exit() from anywhere still restores the screen
        registered = true;
    }
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) install(sig, on_fatal);
    install(SIGTSTP, on_stop);
    install(SIGCONT, on_cont);
    install(SIGWINCH, on_winch);

    g_wanted = 1;
    if (::tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_raw) != 0) {
        g_wanted = 0;
        throw std::runtime_error(std::string("tcsetattr: ") + std::strerror(errno));
    }
    write_all(g_enter_seq, g_enter_len);
    g_active = 1;
    active_ = true;
}

void Raw::leave() {
    if (!active_) return;
    g_wanted = 0;
    restore_now();
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT, SIGWINCH})
        install(sig, SIG_DFL);
    active_ = false;
}

// ---- full-screen programs -----------------------------------------------------------------

bool full_screen_possible() {
    const char* name = std::getenv("TERM");  // a dumb terminal cannot take escape codes
    if (!name || !*name || std::strcmp(name, "dumb") == 0) return false;
    return ::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO);
}

int plain_width() {
    int rows, cols = 80;
    if (::isatty(STDOUT_FILENO)) window_size(rows, cols);
    return cols;
}

std::string plain_text(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& line : lines) {
        size_t end = line.find_last_not_of(' ');
        out += line.substr(0, end == std::string::npos ? 0 : end + 1) + "\n";
    }
    return out;
}

std::string printable(std::string_view s, int max_width) {
    std::string out;
    int w = 0;
    size_t i = 0;
    while (i < s.size()) {
        size_t start = i;
        char32_t c;
        bool ok = decode_utf8(s, i, c);
        int cw = ok ? codepoint_width(c) : -1;
        std::string_view piece = cw < 0 ? std::string_view("?") : s.substr(start, i - start);
        cw = std::max(cw, 1);
        if (w + cw > max_width) break;
        out.append(piece);
        w += cw;
    }
    return out;
}

std::string styled(std::string_view line, const std::vector<Span>& spans, int row) {
    std::vector<const Span*> mine;
    for (const Span& sp : spans)
        if (sp.row == row && sp.col1 > sp.col0) mine.push_back(&sp);
    if (mine.empty()) return std::string(line);
    std::sort(mine.begin(), mine.end(), [](auto a, auto b) { return a->col0 < b->col0; });
    std::string out;
    size_t k = 0, i = 0;
    int col = 0;
    bool open = false;
    auto at_column = [&] {
        if (open && col >= mine[k]->col1) {
            out += "\x1b[0m";
            open = false;
            k++;
        }
        if (!open && k < mine.size() && col >= mine[k]->col0) {
            out += "\x1b[" + mine[k]->sgr + "m";
            open = true;
        }
    };
    while (i < line.size()) {
        at_column();
        size_t start = i;
        char32_t c;
        decode_utf8(line, i, c);
        out.append(line.substr(start, i - start));
        col += display_width(line.substr(start, i - start));
    }
    at_column();
    if (open) out += "\x1b[0m";
    return out;
}

void Screen::draw(const std::vector<std::string>& lines, const std::vector<Span>& spans, int rows,
                  int cols) {
    std::string out;
    if (rows != rows_ || cols != cols_) out += "\x1b[2J";
    rows_ = rows, cols_ = cols;
    for (size_t r = 0; r < lines.size(); r++)
        out += "\x1b[" + std::to_string(r + 1) + ";1H" + styled(lines[r], spans, int(r));
    write_all(out.data(), out.size());
}

KeyReader::Event KeyReader::next(Key& key) {
    while (true) {
        if (!buf_.empty()) {
            size_t used = parse_key(buf_, key);
            if (used > 0) {
                buf_.erase(0, used);
                return Event::Key;
            }
            // Half a sequence: the rest normally follows within milliseconds; a lone ESC (the
            // Esc key) does not. A sequence cut short is dropped as Unknown, never taken for
            // Esc (which quits).
            pollfd p{STDIN_FILENO, POLLIN, 0};
            int ready = ::poll(&p, 1, 50);
            if (ready < 0 && errno == EINTR) continue;
            if (ready <= 0) {
                key = Key{buf_ == "\x1b" ? KeyKind::Escape : KeyKind::Unknown};
                buf_.clear();
                return Event::Key;
            }
        } else if (Raw::take_resized()) {
            return Event::Resized;
        }
        char chunk[256];
        ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) {
            if (Raw::take_resized()) return Event::Resized;
            continue;
        }
        if (n <= 0) {
            if (buf_.empty()) return Event::End;
            key = Key{buf_ == "\x1b" ? KeyKind::Escape : KeyKind::Unknown};
            buf_.clear();  // the end of input inside a sequence: what came of it, then End
            return Event::Key;
        }
        buf_.append(chunk, size_t(n));
    }
}

void key_loop(Screen& screen, const std::function<void()>& draw,
              const std::function<bool(const Key&)>& on_key) {
    KeyReader keys;
    draw();
    while (true) {
        Key key;
        KeyReader::Event e = keys.next(key);
        if (e == KeyReader::Event::End) return;  // the terminal went away
        if (e == KeyReader::Event::Resized) {
            screen.invalidate();
            draw();
            continue;
        }
        if (!on_key(key)) return;
        if (!keys.pending()) draw();
    }
}

}  // namespace term
