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


# Run as `python -c DIE_WITH_PARENT PARENT_PID PROGRAM ARGS...`: sets the parent-death signal
# (Linux's prctl PR_SET_PDEATHSIG, SIGKILL), ends where the parent has already gone (its
# process id is no longer our parent's), then becomes PROGRAM (exec: the same process, and the
# signal stays set). A child started through it ends with the peer that started it: a SIGTERM
# to the peer alone (or to bench-translate, whose peer then ends) would otherwise leave the rerun
# timing on for nobody. It runs before exec, in a new interpreter, not in a preexec_fn: after
# torch has started its threads, Python code between fork and exec can deadlock.
DIE_WITH_PARENT = """
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
    sys.exit("torch_blas: prctl(PR_SET_PDEATHSIG): " + os.strerror(ctypes.get_errno()))
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
os.execv(sys.argv[2], sys.argv[2:])
"""


def child_argv(argv):
    """[sys.executable] + argv, started so that the child dies with this process (Linux)."""
    if not sys.platform.startswith("linux"):
        return [sys.executable] + argv
    return [sys.executable, "-c", DIE_WITH_PARENT, str(os.getpid()), sys.executable] + argv


def run_child(core, argv):
    """This script again with OPENBLAS_CORETYPE=core and argv; its stdout, or None if it failed.
    The child ends when this process does."""
    env = dict(os.environ, OPENBLAS_CORETYPE=core)
    r = subprocess.run(child_argv(argv), env=env, stdout=subprocess.PIPE, text=True)
    return r.stdout if r.returncode == 0 else None
