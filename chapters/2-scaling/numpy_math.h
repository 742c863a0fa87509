// numpy's float64 arithmetic, where the digits of chapter 2's table could depend on it.
//
// The table prints means over 20,000 trials to 2-4 decimals. Another summation order moves a
// mean by a few ulps, which changes a printed digit only where the mean sits that close to a
// rounding edge; to rule even that out, the sums are numpy's: np.sum and np.mean add pairwise
// (numpy's pairwise_sum), not left to right. K @ q is the exception: numpy leaves it to its BLAS,
// whose order depends on the build; here each z[j] is summed left to right over i, every product
// rounded before it is added. The Makefile compiles this folder with -ffp-contract=off, so the
// compiler cannot fuse a*b+c into one rounding in some loops and not in others. The output
// matches numpy 1.24.2 running the article's script on every flag set tests/test_chapter2.cpp
// records.
#pragma once
#include <cstddef>
#include <vector>

// np.sum of float64: pairwise summation. Up to 128 elements it adds with eight running partial
// sums and combines them as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then adds the leftover (n % 8)
// elements in order; below 8 elements it adds left to right. Longer arrays split in two halves,
// the first a multiple of 8 long, summed the same way.
double np_sum(const double* a, size_t n);
double np_sum(const std::vector<double>& a);

// np.mean(a): np_sum(a) / len(a).
double np_mean(const std::vector<double>& a);

// z.std(): sqrt(mean((z - mean(z))^2)), both means with numpy's sums.
double np_std(const std::vector<double>& z);

// K @ q for K of shape (K.size() / q.size(), q.size()) in C order: z[j] = sum_i K[j, i] q[i],
// summed left to right over i.
std::vector<double> np_matmul(const std::vector<double>& K, const std::vector<double>& q);

// np.polyfit(x, y, 1)[0]: the least-squares slope of y against x; NaN for fewer than two
// distinct x. Chapter 6 fits its gradient curves with it too.
double polyfit_slope(const std::vector<double>& x, const std::vector<double>& y);

// np.polyfit(np.log(x), np.log(y), 1)[0]: the least-squares slope of log y against log x, the
// exponent k of y ~ x^k (a straight line on a log-log plot has slope k). x, y > 0.
double loglog_slope(const std::vector<double>& x, const std::vector<double>& y);
