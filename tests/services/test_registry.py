"""The service registry names the built-in services without importing them."""

import importlib
import pkgutil
import subprocess
import sys

import pytest

import colony.services as pkg
from colony.errors import ServiceError
from colony.services import base


def test_the_builtin_table_is_exactly_what_the_modules_register():
    """``BUILTIN`` is written by hand; importing every module under colony.services must
    register exactly its names, each from the module it names."""
    for m in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"colony.services.{m.name}")
    registered = {n: cls.__module__ for n, cls in base._SERVICES.items() if cls.__module__.startswith("colony.services.")}
    assert registered == base.BUILTIN


def test_naming_services_imports_none_and_placing_one_imports_only_its_module():
    code = ("import sys; from colony.services import base; names = base.service_names(); "
            "heavy = [m for m in ('colony.services.query', 'colony.services.sift', 'datafusion', 'scipy') if m in sys.modules]; "
            "base.service_class('jobstore'); "
            "print(names, heavy, 'colony.services.jobstore' in sys.modules, 'colony.services.query' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['device', 'jobstore', 'nearstore', 'objects', 'query', 'sift'] [] True False"


def test_an_unknown_service_names_the_known_ones():
    with pytest.raises(ServiceError, match=r"unknown service 'nope'; known services: \['device', 'jobstore'"):
        base.service_class("nope")
