// The doctest runner: every tests/*.cpp links into one binary, build/bin/tests.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest.h>
