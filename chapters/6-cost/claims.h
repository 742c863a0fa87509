// Section 6's prose claims that need no training, computed where the article makes them
// (main.cpp calls them; read this after layers.h).
//   "첫 단어와 마지막 단어 사이의 거리도 RNN에서는 n단계지만 어텐션에서는 한 단계이며, 기울기가
//    n번의 곱셈을 거치며 소실되던 문제가 구조적으로 사라집니다": |dy_n/dx_1| at initialisation,
//    for the LSTM and for the attention layer, as n grows (right after the complexity table).
//   "두 값이 뒤집히는 지점은 n = 512 부근인데, 이는 ... n = d_model = 512와 정확히
//    맞아떨어집니다": where the naive layer's peak memory passes the LSTM's, from the memory
//    model the table's skip decisions use (its match with measured peaks is tested), as the
//    batch and d_model change (after the measured table).
#pragma once
#include <string>
#include <vector>

// The gradient reaching the first position from the last: for `probes` random unit vectors u
// (one per sequence of a batch), |u^T dy_n/dx_1| averaged, with nn.Linear / nn.LSTM's uniform
// initialisation. Float32: an LSTM's product of n gates underflows to exactly 0.
struct PathLengths {
    std::vector<int> n;
    std::vector<double> lstm, attention;
};
PathLengths path_lengths(const std::vector<int>& ns, int d_model, int heads, int probes = 4);
// What path_lengths holds at its peak: the largest of the layers' predicted peaks (layers.h,
// the table's memory model) over ns, each layer run at batch `probes`.
double path_lengths_peak_bytes(const std::vector<int>& ns, int d_model, int heads, int probes = 4);
void print_path_lengths(const PathLengths& p, int d_model);
void draw_path_lengths(const PathLengths& p, int d_model, const std::string& path);
// Which n of curve g the figure leaves out because g is 0 there (a log axis has no 0): "n ≥ 256"
// for zeros from some n to the end, as the LSTM's are, else "n = 64, 1024"; "" for none. The
// figure writes it in a note: "LSTM, n ≥ 256: 정확히 0, 그리지 않음".
std::string path_length_zeros(const std::vector<int>& n, const std::vector<double>& g);

// The smallest n at which the naive attention layer's predicted peak exceeds the LSTM's.
int memory_crossover(int batch, int d_model, int heads);
// The crossover table over batch and d_model, and where this run's measured peaks crossed
// (naive_mb and lstm_mb per seq_lens entry; a negative value is a skipped cell).
void print_memory_crossover(const std::vector<int>& seq_lens, const std::vector<double>& naive_mb,
                            const std::vector<double>& lstm_mb, int batch, int d_model, int heads);
