"""Colony: composable Arrow data services on embedded devices (SmartNICs, DPUs, CSDs)."""

__version__ = "0.1.0"

from colony import config  # noqa: E402  (pure: no Ray)


def connect(config=None, address=None, **kw):
    """Start or attach to a colony; see :func:`colony.runtime.connect` (imports Ray lazily)."""
    from colony.runtime import connect as _connect
    return _connect(config, address, **kw)
