// The benchmarks' one statistic: the median of a few timings (robust to the one run an
// interruption slowed, where a mean is not).
#pragma once

#include <algorithm>
#include <vector>

namespace bench {

// v: any number of values (the copy is sorted); the middle one, or the mean of the two middle.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace bench
