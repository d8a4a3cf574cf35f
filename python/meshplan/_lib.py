"""Find and load libmeshplan, and call its request -> JSON layer (include/meshplan/api.h).

Where the library comes from, first found wins:
  1. $MESHPLAN_LIB: a path to libmeshplan.so(.0), or a directory holding it;
  2. the copy bundled in this package at install (python/setup.py);
  3. the install prefix of this Python (sys.prefix/lib, then /usr/local/lib, /usr/lib);
  4. the dynamic loader's own search (ldconfig, LD_LIBRARY_PATH).
"""
import ctypes
import ctypes.util
import os
import sys

SONAME = "libmeshplan.so.0"
_DIAG_CAP = 4096  # MP_DIAG_CAP, include/meshplan/status.h


class _Diag(ctypes.Structure):
    """mp_diag (include/meshplan/status.h)."""
    _fields_ = [("text", ctypes.c_char * _DIAG_CAP), ("len", ctypes.c_size_t),
                ("count", ctypes.c_int)]


def _candidates():
    env = os.environ.get("MESHPLAN_LIB")
    if env:
        yield os.path.join(env, SONAME) if os.path.isdir(env) else env
        return  # an explicit choice is not second-guessed
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, SONAME)
    for prefix in (sys.prefix, getattr(sys, "base_prefix", sys.prefix), "/usr/local", "/usr"):
        yield os.path.join(prefix, "lib", SONAME)
    found = ctypes.util.find_library("meshplan")
    yield found or SONAME


def _load():
    tried = []
    for cand in _candidates():
        if os.path.sep in cand and not os.path.exists(cand):
            tried.append(f"{cand} (absent)")
            continue
        try:
            return ctypes.CDLL(cand), cand
        except OSError as e:
            tried.append(f"{cand} ({e})")
    raise ImportError("meshplan: libmeshplan not found; build it (cmake --build build) and "
                      "reinstall the package, install it (cmake --install build), or set "
                      "MESHPLAN_LIB to its path. Tried: " + "; ".join(tried))


_so, path = _load()
_so.mp_api_call_json.restype = ctypes.c_int
_so.mp_api_call_json.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t,
                                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_Diag)]
_so.mp_api_error_json.restype = ctypes.c_void_p
_so.mp_api_error_json.argtypes = [ctypes.c_int, ctypes.POINTER(_Diag)]
_so.mp_api_free.restype = None
_so.mp_api_free.argtypes = [ctypes.c_void_p]
_so.mp_api_command_count.restype = ctypes.c_size_t
_so.mp_api_command_count.argtypes = []
_so.mp_api_command_name.restype = ctypes.c_char_p
_so.mp_api_command_name.argtypes = [ctypes.c_size_t]


def _take(ptr):
    """The library's malloc'd string as Python text, freed by the library."""
    try:
        return ctypes.string_at(ptr).decode("utf-8")
    finally:
        _so.mp_api_free(ptr)


def call(command, request):
    """(status, JSON text): the answer when status is 0, else the error object."""
    out = ctypes.c_void_p()
    diag = _Diag()
    data = request.encode("utf-8")
    st = _so.mp_api_call_json(command.encode("utf-8"), data, len(data), ctypes.byref(out),
                              ctypes.byref(diag))
    if st == 0:
        return 0, _take(out)
    if out.value:
        _so.mp_api_free(out)
    err = _so.mp_api_error_json(st, ctypes.byref(diag))
    if not err:
        raise MemoryError("meshplan: out of memory writing the error")
    return st, _take(err)


def commands():
    return [_so.mp_api_command_name(i).decode() for i in range(_so.mp_api_command_count())]
