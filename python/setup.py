"""Builds the hetsim package: runs the project's own CMake build of the shared
libhetsim (capi/hetsim.h) and puts libhetsim.so and the catalogs it reads
(models/catalog, clusters/catalog, clusters/gpus.json, clusters/links.json)
inside the package, so that a wheel built here installs on another machine with the same Debian
libraries (libcjson, libigraph, libglpk, libgsl: scripts/setup.sh).

Environment:
  HETSIM_SOURCE_DIR       the hetsim source tree (default: the parent of this
                          folder; pip builds ./python in place)
  HETSIM_CMAKE_BUILD_DIR  reuse this CMake build folder (e.g. ../build) instead
                          of configuring python/build-cmake/
  HETSIM_BUILD_JOBS       parallel build jobs (default 2)
"""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
DATA_FILES = [
    "models/catalog/*.json",
    "clusters/catalog/*.json",
    "clusters/gpus.json",
    "clusters/links.json",  # the calibrated interconnects cluster files may name
]


def _source_dir() -> Path:
    src = Path(os.environ.get("HETSIM_SOURCE_DIR", HERE.parent)).resolve()
    if not (src / "capi" / "hetsim.h").is_file():
        raise SystemExit(
            f"hetsim: {src} is not the hetsim source tree (no capi/hetsim.h); "
            "build from the repository (pip install ./python) or set HETSIM_SOURCE_DIR")
    return src


class BuildWithCMake(build_py):
    """build_py that first builds libhetsim.so with CMake."""

    def run(self) -> None:
        super().run()
        src = _source_dir()
        bdir = os.environ.get("HETSIM_CMAKE_BUILD_DIR")
        if bdir:
            bdir = Path(bdir)
            if not bdir.is_absolute():
                bdir = (src / bdir).resolve()
        else:
            bdir = HERE / "build-cmake"
            if not (bdir / "CMakeCache.txt").is_file():
                subprocess.check_call(["cmake", "-S", str(src), "-B", str(bdir),
                                       "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DHS_SHARED_LIB=ON"])
        jobs = os.environ.get("HETSIM_BUILD_JOBS", "2")
        subprocess.check_call(["cmake", "--build", str(bdir), "--target", "hetsim_shared",
                               "-j", jobs])
        lib = bdir / "libhetsim.so"
        if not lib.is_file():
            raise SystemExit(f"hetsim: the CMake build made no {lib}")
        pkg = Path(self.build_lib) / "hetsim"
        pkg.mkdir(parents=True, exist_ok=True)
        shutil.copy2(lib, pkg / "libhetsim.so")
        shutil.copy2(src / "capi" / "hetsim.h", pkg / "hetsim.h")
        data = pkg / "data"
        if data.exists():
            shutil.rmtree(data)
        for pattern in DATA_FILES:
            for f in sorted(src.glob(pattern)):
                dst = data / f.relative_to(src)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dst)


class BinaryDistribution(Distribution):
    """The wheel carries a shared library: tag it for this platform."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution)
