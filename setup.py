"""Build hook for the optional native hot path of the traffic generator.

pyproject.toml holds the package metadata. The extension rdmaspy.traffic._hotpath is
built only where the libibverbs and librdmacm headers exist (rdma-core's -dev
packages); elsewhere the package installs without it and ``rdmaspy serve/load`` say
that this machine has no native RDMA path and point to the lab.
RDMASPY_NATIVE=0 skips the extension, RDMASPY_NATIVE=1 makes its absence an error.
"""
import os
import sysconfig

from setuptools import Extension, setup


def _have_rdma_headers() -> bool:
    dirs = [sysconfig.get_config_var("INCLUDEDIR") or "/usr/include", "/usr/include", "/usr/local/include"]
    dirs += [d for d in os.environ.get("CPATH", "").split(os.pathsep) if d]
    need = (os.path.join("infiniband", "verbs.h"), os.path.join("rdma", "rdma_cma.h"))
    return all(any(os.path.exists(os.path.join(d, h)) for d in dirs) for h in need)


want = os.environ.get("RDMASPY_NATIVE", "auto")
have = _have_rdma_headers()
if want == "1" and not have:
    raise SystemExit("RDMASPY_NATIVE=1 but the libibverbs/librdmacm headers are missing "
                     "(Debian: apt-get install libibverbs-dev librdmacm-dev)")
ext_modules = []
if have and want != "0":
    ext_modules.append(Extension("rdmaspy.traffic._hotpath", ["rdmaspy/traffic/_hotpath.c"],
                                 libraries=["ibverbs", "rdmacm"], extra_compile_args=["-O2", "-std=gnu11"]))

setup(ext_modules=ext_modules)
