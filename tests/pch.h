// What most test units include, precompiled once for all of them (the Makefile's TEST_PCH):
// doctest's declarations and the standard library's heaviest headers. Each unit still includes
// what it uses itself; this only saves compiling the same headers 25 times.
#include <doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>
