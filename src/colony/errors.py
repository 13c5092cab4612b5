"""Typed Colony errors. Every message says what went wrong and what to do."""


class ColonyError(Exception):
    """Base of every error Colony raises on purpose."""


class CodecError(ColonyError):
    """An object buffer could not be decoded (or encoded)."""


class BadMagic(CodecError):
    pass


class UnsupportedVersion(CodecError):
    pass


class TruncatedObject(CodecError):
    pass


class BadLength(CodecError):
    pass


class ChecksumMismatch(CodecError):
    pass


class CorruptObject(CodecError):
    pass


class EngineUnavailable(ColonyError):
    """A compression engine was chosen that this machine does not have."""


class DataError(ColonyError):
    """Input data does not have the shape a loader or generator needs."""


class UnknownDevice(ColonyError):
    """A device name that the colony's configuration does not define."""


class RuntimeFailure(ColonyError):
    """The distributed runtime (Ray) could not start, attach or reach a device."""


class DeviceFull(ColonyError):
    """A device cannot take more data now (back-pressure with policy 'raise')."""
