"""DeviceHost: one device's store and services, and the only way into them.

The Ray device actor wraps exactly one DeviceHost; tests use it in-process. Dispatch
only reaches methods marked @endpoint on services placed on this device.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from typing import Any

from colony.services.base import DeviceContext, Service, service_class
from colony.errors import InvalidArgument, ServiceError


class DeviceHost:
    def __init__(self, ctx: DeviceContext, services: dict[str, dict] | list[str] = ()) -> None:
        self.ctx = ctx
        specs = services if isinstance(services, dict) else {s: {} for s in services}
        self.services: dict[str, Service] = {
            name: service_class(name)(ctx, **(opts or {})) for name, opts in specs.items()}

    def rekey(self, fingerprint: str, calibration: dict) -> None:
        """The device changed at run time (:meth:`Colony.set_link`): its calibrations are
        valid for ``fingerprint`` from now on, and ``calibration`` is its record for it."""
        if fingerprint == self.ctx.fingerprint:
            return
        self.ctx.fingerprint, self.ctx.calibration = fingerprint, calibration
        for svc in self.services.values():
            svc.rekeyed()

    def call(self, service: str, method: str, *args: Any, **kwargs: Any) -> Any:
        svc = self.services.get(service)
        if svc is None:
            raise ServiceError(f"service {service!r} is not placed on device {self.ctx.name!r}; "
                               f"placed: {sorted(self.services)}")
        fn = getattr(type(svc), method, None)
        if method.startswith("_") or fn is None or not getattr(fn, "__colony_endpoint__", False):
            raise ServiceError(f"{service}.{method} is not an endpoint of service {service!r}")
        _check_args(service, method, fn, svc, args, kwargs)
        return fn(svc, *args, **kwargs)


@functools.lru_cache(maxsize=None)
def _signature(fn) -> tuple[inspect.Signature, dict]:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an unresolvable annotation only skips the type check
        hints = {}
    return inspect.signature(fn), hints


def _fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` can be what a simple annotation says (containers checked shallowly)."""
    if hint is Any or hint is inspect.Parameter.empty:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool) or _is_np(value, "iu")
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) or _is_np(value, "iuf")
    if hint is bytes:       # payloads: each service decodes and names its own error (e.g. BadPlan)
        return True
    target = origin or hint
    args = typing.get_args(hint)
    if target in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return False
        if target is tuple and args and args[-1] is not Ellipsis:
            return len(value) == len(args) and all(_fits(v, h) for v, h in zip(value, args))
        return not args or all(_fits(v, args[0]) for v in value)
    if target is dict:
        return isinstance(value, dict) and (not args or all(_fits(k, args[0]) and _fits(v, args[1])
                                                            for k, v in value.items()))
    if isinstance(target, type):
        return isinstance(value, target)
    return True


def _is_np(value: Any, kinds: str) -> bool:
    dt = getattr(value, "dtype", None)
    return dt is not None and getattr(value, "ndim", 1) == 0 and dt.kind in kinds


def _check_args(service: str, method: str, fn, svc, args: tuple, kwargs: dict) -> None:
    """A peer's call must match the endpoint's signature and its simple annotations."""
    sig, hints = _signature(fn)
    try:
        bound = sig.bind(svc, *args, **kwargs)
    except TypeError as e:
        raise InvalidArgument(f"{service}.{method}{str(sig).replace('(self, ', '(', 1)}: {e}") from None
    for name, value in list(bound.arguments.items())[1:]:
        param = sig.parameters[name]
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if not _fits(value, hints.get(name, Any)):
            raise InvalidArgument(f"{service}.{method}: argument {name!r} must be {hints[name]}, "
                                  f"got {type(value).__name__} {str(value)[:60]!r}")
