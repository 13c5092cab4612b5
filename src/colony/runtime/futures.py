"""Ray futures to results: a device's own Colony error comes back as itself, Ray's
failures as :class:`colony.errors.RuntimeFailure` saying what to do."""

from __future__ import annotations

import ray

from colony.errors import ColonyError, RuntimeFailure


def resolve(refs, timeout: float | None = None):
    """``ray.get``, with a device's own Colony error re-raised as itself (clean message)."""
    try:
        return ray.get(refs, timeout=timeout)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, ColonyError):
            raise cause from None
        raise
    except ray.exceptions.GetTimeoutError as e:
        raise RuntimeFailure(f"a device did not answer within {timeout} s; check `colony status`") from e
    except ray.exceptions.RayActorError as e:
        msg = e.error_msg if hasattr(e, "error_msg") else e
        raise RuntimeFailure(f"a device actor died or is restarting ({type(e).__name__}): {msg}; "
                             f"retry once Ray has restarted it, or check `colony status`") from e
