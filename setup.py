"""Build the Cython extension modules: every ``reactor_backend/*.pyx`` becomes one extension.

Adding a ``.pyx`` file is enough to have it compiled by ``pip install -e .``.
"""
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
extensions = [
    Extension(
        f"reactor_backend.{pyx.stem}",
        [str(pyx.relative_to(HERE))],
        include_dirs=[numpy.get_include()],
        extra_compile_args=["-O3"],
    )
    for pyx in sorted((HERE / "reactor_backend").glob("*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    )
)
