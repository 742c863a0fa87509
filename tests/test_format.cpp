// common/program/format: torch's tensor printing and Python's float repr, character for
// character, as the chapters print them beside the article's blocks.
#include <string>

#include "common/program/format.h"
#include "common/tensor.h"
#include "tests/util.h"

TEST_CASE("format: torch's tensor printing and Python's float repr") {
    CHECK(torch_str(Tensor::from({{0, 0, 1, 0}, {1, 1, 1, 0}})) ==
          "tensor([[0., 0., 1., 0.],\n        [1., 1., 1., 0.]])");
    CHECK(torch_str(Tensor::from({0.5f, -1.25f}, {2})) == "tensor([ 0.5000, -1.2500])");
    CHECK(torch_str(Tensor::scalar(0.5570538f)) == "tensor(0.5571)");
    CHECK(torch_str(Tensor::from({1e-5f, 1.0f}, {2})) == "tensor([1.0000e-05, 1.0000e+00])");
    // 20 elements of width 7: (80 - 7) / 9 = 8 per line.
    std::string wrapped = torch_str(Tensor::full({20}, 0.5f));
    CHECK(wrapped.find("0.5000,\n        0.5000") != std::string::npos);
    // Over 1000 elements torch prints the 3 first and 3 last of each dim; max/min > 1000 switches
    // to scientific notation (both checked against torch 1.13's print).
    CHECK(torch_str(Tensor::arange(2000)) ==
          "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
          "        1.9990e+03])");
    CHECK(torch_str(Tensor::arange(1001) + 100.0f) ==
          "tensor([ 100.,  101.,  102.,  ..., 1098., 1099., 1100.])");
    CHECK(py_repr(0.557053804397583) == "0.557053804397583");
    CHECK(py_repr(1.1920928955078125e-07) == "1.1920928955078125e-07");
    CHECK(py_repr(3.0) == "3.0");
    CHECK(py_repr(1e16) == "1e+16");
    CHECK(py_repr(123456789012345.0) == "123456789012345.0");
    CHECK(py_repr(0.0001) == "0.0001");
    CHECK(py_repr(-0.00001) == "-1e-05");
    CHECK(fixed(0.125, 2) == "0.12");  // round half to even on the exact binary value
}
