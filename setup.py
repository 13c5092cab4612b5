"""Only the optional C extensions (everything else is in pyproject.toml): the batch loops of
colony.codec and the Substrait plan decoder of colony.query.

``optional=True``: where no C compiler is available the install still succeeds; the software
engine runs its per-segment ctypes route and plans decode through DataFusion instead (slower,
same results)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("colony.codec._batch", ["src/colony/codec/_batch.c"], optional=True,
                             extra_compile_args=["-O2"]),
                   Extension("colony.query._pbjson", ["src/colony/query/_pbjson.c"], optional=True,
                             extra_compile_args=["-O2"])])
