"""Ray futures to results, with a deadline; Ray's exceptions turned into Colony's.

Every call the runtime makes to a device goes through :func:`resolve`: a device that
does not answer within the deadline raises :class:`DeadlineExceeded` naming it, a dead
actor :class:`DeviceLost`, and an error a service raised comes back as itself when it
is a Colony error, else as :class:`ServiceFailed` (never a raw ``RayTaskError``).
"""

from __future__ import annotations

from typing import Sequence

import ray

from colony.errors import ColonyError, DeadlineExceeded, DeviceLost, ServiceFailed


def _device_of(refs, devices: Sequence[str] | str | None, i: int | None = None) -> str | None:
    if devices is None or isinstance(devices, str):
        return devices
    return devices[i] if i is not None and i < len(devices) else (devices[0] if len(devices) == 1 else None)


def _translate(e: BaseException, device: str | None, timeout: float | None) -> BaseException:
    where = f"device {device!r}" if device else "a device"
    if isinstance(e, ray.exceptions.GetTimeoutError):
        return DeadlineExceeded(f"{where} did not answer within its deadline of {timeout} s; it may be hung or "
                                f"overloaded: check `colony status`, or pass a longer timeout=", device, timeout)
    if isinstance(e, ray.exceptions.RayTaskError):
        cause = getattr(e, "cause", None)
        if isinstance(cause, ColonyError):
            return cause
        if isinstance(cause, ray.exceptions.RayActorError):
            return _translate(cause, device, timeout)
        kind = type(cause).__name__ if cause is not None else "error"
        text = str(cause) if cause is not None else str(e).splitlines()[-1]
        return ServiceFailed(f"{where} raised {kind}: {text}", device, kind)
    if isinstance(e, ray.exceptions.RayActorError):
        return DeviceLost(f"{where} was lost ({type(e).__name__}): its actor died or is restarting; calls in "
                          f"flight are not replayed: retry once Ray has restarted it (`colony status`)", device)
    return e


def resolve(refs, timeout: float | None = None, devices: Sequence[str] | str | None = None):
    """``ray.get`` with a deadline; Ray's errors as Colony's, naming the device.

    ``devices``: the device of ``refs`` (one ref) or one per ref (a list), for the error.
    For a list, the deadline is shared: it bounds the whole wait, not each ref.
    """
    if isinstance(refs, list):
        if not refs:
            return []
        ready, pending = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        if pending:
            late = [i for i, r in enumerate(refs) if r in set(pending)]
            names = [_device_of(refs, devices, i) for i in late]
            for r in pending:
                try:
                    ray.cancel(r)
                except Exception:
                    pass
            shown = [n for n in names if n] or None
            raise DeadlineExceeded(f"device(s) {shown} did not answer within the deadline of {timeout} s; they "
                                   f"may be hung or overloaded: check `colony status`, or pass a longer timeout=",
                                   shown[0] if shown else None, timeout)
        out = []
        for i, r in enumerate(refs):
            try:
                out.append(ray.get(r))
            except Exception as e:
                t = _translate(e, _device_of(refs, devices, i), timeout)
                if t is e:
                    raise
                raise t from None
        return out
    try:
        return ray.get(refs, timeout=timeout)
    except Exception as e:
        t = _translate(e, _device_of(refs, devices), timeout)
        if t is e:
            raise
        if isinstance(e, ray.exceptions.GetTimeoutError):
            try:
                ray.cancel(refs)
            except Exception:
                pass
        raise t from None
