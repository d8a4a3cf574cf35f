"""Bundle the built C library into the package at install time.

The library comes from $MESHPLAN_BUILD_DIR (a CMake build directory, or any directory holding
libmeshplan.so.0), else ../build beside this file. Without one the package still installs and
then looks for libmeshplan at run time ($MESHPLAN_LIB, the install prefix, the loader's path).
"""
import os
import shutil

from setuptools import setup
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
SONAME = "libmeshplan.so.0"


def bundle():
    """Copy the library into the package directory; returns the copy's path (removed after the
    build, so no stale library stays in the source tree), or None."""
    build = os.environ.get("MESHPLAN_BUILD_DIR") or os.path.join(HERE, "..", "build")
    src = os.path.join(build, SONAME)
    dst = os.path.join(HERE, "meshplan", SONAME)
    if os.path.isfile(src):
        shutil.copyfile(os.path.realpath(src), dst)
        print(f"meshplan: bundling {os.path.realpath(src)}")
        return dst
    print(f"meshplan: no {SONAME} in {build}: the package will look for libmeshplan at run "
          "time (MESHPLAN_LIB, the install prefix)")
    return None


class BinaryDistribution(Distribution):
    """The wheel holds a native library: mark it platform-specific."""

    def has_ext_modules(self):
        return True


copy = bundle()
try:
    setup(distclass=BinaryDistribution)
finally:
    if copy and os.path.exists(copy):
        os.remove(copy)
