"""Only the optional C extensions (everything else is in pyproject.toml): the batch loops of
colony.codec, the Substrait plan decoder of colony.query and the forest walk of colony.cost.

``optional=True``: where no C compiler is available the install still succeeds; the software
engine runs its per-segment ctypes route, plans decode through DataFusion and forests walk
in Python instead (slower, same results)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("colony.codec._batch", ["src/colony/codec/_batch.c"], optional=True,
                             extra_compile_args=["-O2"]),
                   Extension("colony.query._pbjson", ["src/colony/query/_pbjson.c"], optional=True,
                             extra_compile_args=["-O2"]),
                   Extension("colony.cost._forest", ["src/colony/cost/_forest.c"], optional=True,
                             extra_compile_args=["-O2"])])
