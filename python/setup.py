"""Installs the systolic Python package, offline:

    /usr/bin/python3 -m pip install --no-build-isolation --prefix ~/.local ./python

builds systolic._native with the project's CMake build (build/, or $SYSTOLIC_BUILD_DIR; configured
when missing) and installs it with the pure-Python files. Nothing is fetched: the build uses
Debian's pybind11, setuptools and numpy."""
import glob
import os
import re
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    with open(os.path.join(ROOT, "include", "systolic", "version.h")) as f:
        return re.search(r'kVersion = "([^"]+)"', f.read()).group(1)


class CMakeBuild(build_ext):
    """The extension as the ordinary build makes it (target systolic_python), copied in."""

    def build_extension(self, ext):
        build = os.path.abspath(os.environ.get("SYSTOLIC_BUILD_DIR", os.path.join(ROOT, "build")))
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", build, "--target", "systolic_python", "-j", str(os.cpu_count() or 1)])
        built = glob.glob(os.path.join(build, "python", "systolic", "_native*.so"))
        if not built:
            raise RuntimeError(f"the build left no systolic/_native*.so under {build}/python")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)


setup(
    name="systolic",
    version=version(),
    description="A hardware-aware inference compiler and runtime for vision models (ONNX Runtime's API included)",
    packages=["systolic"],
    ext_modules=[Extension("systolic._native", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    zip_safe=False,
)
