// numpy's float64 sums for chapter 2 (numpy_math.h says why they matter).
#include "chapters/2-scaling/numpy_math.h"

#include <cmath>
#include <stdexcept>

double np_sum(const double* a, size_t n) {
    if (n < 8) {
        double s = 0.0;
        for (size_t i = 0; i < n; i++)
            s += a[i];
        return s;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++)
            r[j] = a[j];
        size_t i = 8;
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; j++)
                r[j] += a[i + j];
        double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            s += a[i];
        return s;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return np_sum(a, n2) + np_sum(a + n2, n - n2);
}

double np_sum(const std::vector<double>& a) { return np_sum(a.data(), a.size()); }

double np_mean(const std::vector<double>& a) { return np_sum(a) / a.size(); }

double np_std(const std::vector<double>& z) {
    const double mean = np_mean(z);
    std::vector<double> sq(z.size());
    for (size_t i = 0; i < z.size(); i++)
        sq[i] = (z[i] - mean) * (z[i] - mean);
    return std::sqrt(np_mean(sq));
}

double polyfit_slope(const std::vector<double>& x, const std::vector<double>& y) {
    const size_t n = x.size();
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++)
        mx += x[i] / double(n), my += y[i] / double(n);
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < n; i++) {
        const double dx = x[i] - mx, dy = y[i] - my;
        sxy += dx * dy;
        sxx += dx * dx;
    }
    return n >= 2 ? sxy / sxx : NAN;  // two or more points all at one x: 0 / 0, NaN too
}

double loglog_slope(const std::vector<double>& x, const std::vector<double>& y) {
    std::vector<double> log_x(x.size()), log_y(y.size());
    for (size_t i = 0; i < x.size(); i++)
        log_x[i] = std::log(x[i]), log_y[i] = std::log(y[i]);
    return polyfit_slope(log_x, log_y);
}

std::vector<double> np_matmul(const std::vector<double>& K, const std::vector<double>& q) {
    const size_t d = q.size(), rows = d == 0 ? 0 : K.size() / d;
    if (rows * d != K.size()) throw std::invalid_argument("np_matmul: K is not (rows, len(q))");
    std::vector<double> z(rows);
    for (size_t j = 0; j < rows; j++) {
        double s = 0.0;
        for (size_t i = 0; i < d; i++)
            s += K[j * d + i] * q[i];
        z[j] = s;
    }
    return z;
}
