"""Only the optional C batch loops of colony.codec (everything else is in pyproject.toml).

``optional=True``: where no C compiler is available the install still succeeds and the
software engine runs its per-segment ctypes route instead (slower, same results)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("colony.codec._batch", ["src/colony/codec/_batch.c"], optional=True,
                             extra_compile_args=["-O2"])])
