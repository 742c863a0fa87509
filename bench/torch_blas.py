"""The BLAS under a CPU torch peer, named (bench/openblas.h says why it matters).

Debian's torch 1.13 is built with BLAS_INFO=generic: it calls whatever libblas.so.3 the system
points at, OpenBLAS where that is installed, and OpenBLAS picks its kernels ("core") from the
CPU's model number. The peers print what they ran on, and where the core is below this CPU's
best (bench-gemm --openblas-best lists those), they run again in a child process with
OPENBLAS_CORETYPE set, and are read at the faster of the two.
"""
import ctypes
import os
import re
import subprocess
import sys


def blas_info(torch):
    """torch.__config__.show()'s BLAS setting, e.g. 'BLAS_INFO=generic'."""
    m = re.search(r"BLAS_INFO=[^,\s]+", torch.__config__.show())
    return m.group(0) if m else "BLAS_INFO not reported"


def openblas_core():
    """(core, path) of the OpenBLAS this process has loaded, or (None, None)."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libopenblas" in line})
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode(), path
        except (OSError, AttributeError):
            continue
    return None, None


def describe(torch):
    """One line: torch's BLAS and the OpenBLAS core it runs (after torch has run a product)."""
    torch.ones(2, 2) @ torch.ones(2, 2)  # make sure the BLAS is loaded
    core, path = openblas_core()
    where = f"OpenBLAS core {core} ({path})" if core else "no OpenBLAS loaded"
    return f"torch BLAS: {blas_info(torch)}, {where}"


def rerun_core(best_cores):
    """The core to rerun with (the first of best_cores) where the loaded one is not among them."""
    core, _ = openblas_core()
    if not core or not best_cores:
        return None
    if core.lower() in (c.lower() for c in best_cores):
        return None
    return best_cores[0]


def run_child(core, argv):
    """This script again with OPENBLAS_CORETYPE=core and argv; its stdout, or None if it failed."""
    env = dict(os.environ, OPENBLAS_CORETYPE=core)
    r = subprocess.run([sys.executable] + argv, env=env, stdout=subprocess.PIPE, text=True)
    return r.stdout if r.returncode == 0 else None
