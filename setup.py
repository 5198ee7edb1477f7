"""Build the Cython extension modules: every ``reactor_backend/*.pyx`` and ``scenarios/*.pyx`` becomes one
extension (the runtime's hot paths; the scenarios' checksum encoder).

Adding a ``.pyx`` file to either package is enough to have it compiled by ``pip install -e .``. A ``.pxi``
file is part of the ``.pyx`` that includes it (``include "_ports.pxi"``): cythonize follows includes, so a
changed ``.pxi`` rebuilds its module, and the Makefile's install stamp depends on every ``.pxi`` too. A ``.pxd``
declares a module's compiled classes to another that cimports them (``_core`` calls ``_codec``'s slot ends):
cythonize rebuilds both when it changes, and the stamp depends on it.
"""
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
extensions = [
    Extension(
        f"{package}.{pyx.stem}",
        [str(pyx.relative_to(HERE))],
        include_dirs=[numpy.get_include()],
        extra_compile_args=["-O3"],
    )
    for package in ("reactor_backend", "scenarios")
    for pyx in sorted((HERE / package).glob("*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    )
)
