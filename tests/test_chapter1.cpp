// Chapter 1 prints the article's block byte for byte; the causal mask zeroes the upper triangle.
#include <algorithm>
#include <sstream>

#include "tests/util.h"

TEST_CASE("chapter 1: default output equals the article's block") {
    auto r = testutil::run("1-self-attention");
    CHECK(r.exit_code == 0);
    CHECK(r.out == testutil::read_file("tests/expected/1-self-attention.txt"));
}

TEST_CASE("chapter 1: --mask causal gives exactly 0 above the diagonal and rows summing to 1") {
    auto r = testutil::run("1-self-attention", "--mask causal");
    REQUIRE(r.exit_code == 0);
    // Parse the 4 rows of the weights block: the lines after "어텐션 가중치:".
    std::istringstream in(r.out);
    std::string line;
    std::getline(in, line);
    REQUIRE(line == "어텐션 가중치:");
    for (int i = 0; i < 4; i++) {
        std::getline(in, line);
        for (char& c : line)
            if (c == '[' || c == ']' || c == ',' || c == '(' || c == ')') c = ' ';
        std::istringstream row(line.substr(line.find_first_of("0123456789")));
        double sum = 0;
        for (int j = 0; j < 4; j++) {
            double w;
            row >> w;
            if (j > i) CHECK(w == 0.0);  // printed as 0.0000: exactly zero after -inf
            sum += w;
        }
        CHECK(sum == doctest::Approx(1.0).epsilon(3e-4));  // four values rounded to 4 decimals
    }
}

TEST_CASE("chapter 1: --explain walks through one query") {
    auto r = testutil::run("1-self-attention", "--explain 1");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("0.0217 × V_1 + 0.1607 × V_2 + 0.7201 × V_3 + 0.0975 × V_4") !=
          std::string::npos);
    CHECK(r.out.find("= [1.2456, 1.9440, 2.5792, 2.5159]") != std::string::npos);
    // Step 4 shows V's rows (torch: V = X @ W_V), so the sum can be checked by hand; the
    // integers are written as torch and --live write them ("2.", not "2.0").
    CHECK(r.out.find("4) V의 행을 가중합:\n"
                     "   V_1 = [2., 1., 0., 0.]\n"
                     "   V_2 = [3., 3., 2., 1.]\n"
                     "   V_3 = [1., 2., 3., 3.]\n"
                     "   V_4 = [0., 0., 1., 2.]\n"
                     "   0.0217 × V_1 + ") != std::string::npos);
    // The same query row as the widget's (tests/expected/1-self-attention-live.txt):
    // q_1 = x_1 W_Q.
    CHECK(r.out.find("1번 토큰의 쿼리 q_1 = [ 0., -1.,  1.,  1.]\n") != std::string::npos);
    // With the mask, token 3's last score is -inf and its weight 0 (torch: 0.7856 0.1753 0.0391
    // 0.0000); the dot products stay those of Q @ K^T.
    r = testutil::run("1-self-attention", "--explain 3 --mask causal --no-figures");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("3번 토큰의 쿼리 q_3 = [-1., -1., -1., -2.]\n") != std::string::npos);
    CHECK(r.out.find("   k_3 = [ 1., -1.,  1.,  2.]  ->  q·k_3 = -5.0000\n") != std::string::npos);
    // The sum is the four weights added up (0.7856 + 0.1753 + 0.0391 + 0), not a literal.
    CHECK(r.out.find("2) √d_k(= 2.0000)로 나눔: 0.5000 -1.0000 -2.5000 -inf  (causal 마스크: j > "
                     "i는 -inf)\n3) softmax 가중치: 0.7856 0.1753 0.0391 0.0000  "
                     "(합 = 1.0000)\n") != std::string::npos);
    CHECK(r.out.find("   0.7856 × V_1 + 0.1753 × V_2 + 0.0391 × V_3 + 0.0000 × V_4\n"
                     "   = [2.1362, 1.3897, 0.4679, 0.2926]\n") != std::string::npos);
}

TEST_CASE("chapter 1: an unknown flag or a bad value -> exit 2 and one line") {
    for (const char* args :
         {"--bogus", "--explain x", "--explain 9", "--mask sideways", "--explain", "extra"}) {
        auto r = testutil::run("1-self-attention", args);
        CHECK_MESSAGE(r.exit_code == 2, args);
        CHECK_MESSAGE(r.out.empty(), args);
        CHECK_MESSAGE(std::count(r.err.begin(), r.err.end(), '\n') == 1, args << ": " << r.err);
    }
    CHECK(testutil::run("1-self-attention", "extra").err ==
          "1-self-attention: error: unexpected argument 'extra': every option is a --flag (see "
          "--help)\n");
    auto help = testutil::run("1-self-attention", "--help");
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("--mask") != std::string::npos);
    CHECK(help.out.find("(default: none)") != std::string::npos);
}
