// Text output that matches Python character for character, so a chapter's terminal can be held
// next to the article: torch's default tensor printing and Python's repr of a float.
#pragma once
#include <string>

#include "common/tensor.h"

// torch's str(tensor) with default print options (precision 4, linewidth 80, threshold 1000,
// edgeitems 3): `tensor([[0.0217, 0.1607, ...],\n        [...]])`.
std::string torch_str(const Tensor& t);

// Python's repr(float): the shortest string that reads back as the same double,
// e.g. 0.557053804397583, 1.1920928955078125e-07, 1e+16, 3.0.
std::string py_repr(double v);

// Python's f"{v:.{digits}f}" (round half to even on the exact binary value, like printf).
std::string fixed(double v, int digits);

// Python's f"{v:,}": 1048576 -> "1,048,576".
std::string with_commas(int64_t v);
