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


class QuantifyError(ColonyError):
    """The offload-benefit toolkit (colony.quantify) could not do what was asked."""


class InvalidParameter(QuantifyError, ValueError):
    """A model or workload parameter is outside the range the method allows."""


class SpecFileError(QuantifyError):
    """A platform spec or results file is missing, unreadable or lacks a field."""


class ToolUnavailable(QuantifyError):
    """An external tool or facility (stress-ng, RAPL, a network share) is not available here."""


class ProtocolError(QuantifyError):
    """A key-value daemon frame was malformed or the daemon answered with an error."""


class NotAnMBWU(QuantifyError):
    """A measured peak was throttled by the platform (CPU, memory, network), not the medium."""


class NearStoreError(ColonyError):
    """Near-storage computation (colony.nearstore) was asked something it cannot do."""


class AddressError(NearStoreError):
    """A global block address or device id is out of range."""


class BlockRangeError(NearStoreError):
    """A block read or write falls outside what a device's block store holds."""


class LockTimeout(NearStoreError):
    """An operation waited too long for a locked block (a COSTA policy never unlocked it)."""


class UnknownOperation(NearStoreError):
    """No computational-storage operation is registered under that name."""


class StaleCalibration(ColonyError):
    """A stored calibration no longer matches this device or this build (different features,
    fingerprint or software); recalibrate (``colony query --recalibrate``)."""
