"""Typed Colony errors. Every message says what went wrong and what to do."""


class ColonyError(Exception):
    """Base of every error Colony raises on purpose."""


class CodecError(ColonyError):
    """An object buffer could not be decoded (or encoded)."""


class BadMagic(CodecError):
    """The buffer does not start with Colony's object magic: not a Colony object (or the wrong offset)."""


class UnsupportedVersion(CodecError):
    """The object was written by a newer format version than this build reads; upgrade Colony."""


class TruncatedObject(CodecError):
    """The buffer ends before the lengths in its header say it should: a partial write or transfer."""


class BadLength(CodecError):
    """A length or count in the header is impossible for this buffer (forged or corrupt header)."""


class ChecksumMismatch(CodecError):
    """A checksum does not match the bytes: the object was corrupted at rest or in transit."""


class CorruptObject(CodecError):
    """The header decodes but its contents contradict each other; the object cannot be trusted."""


class EngineUnavailable(ColonyError):
    """A compression engine was chosen that this machine does not have."""


class EngineMismatch(CodecError):
    """An object's segments are in a format only the engine that produced them decodes."""


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


# -- sift.partition --------------------------------------------------------------------------------

class SiftError(ColonyError):
    """Bad sifting input or configuration."""


# -- config.schema ---------------------------------------------------------------------------------

class ConfigError(ColonyError):
    """A configuration value is missing, unknown or out of range."""


# -- services.base ---------------------------------------------------------------------------------

class ServiceError(ColonyError):
    """A service call that the device cannot serve (service not placed, not an endpoint, bad options)."""


# -- query.stats -----------------------------------------------------------------------------------

class StatsError(ColonyError):
    """Column statistics (KLL/Theta sketches) could not be built or merged."""


# -- query.estimate --------------------------------------------------------------------------------

class Unsupported(ColonyError):
    """The plan holds an operator the estimator does not model (e.g. a join)."""


class BadPlan(ColonyError):
    """Substrait bytes that do not decode to a plan; re-plan the SQL on the client."""


# -- query.plan ------------------------------------------------------------------------------------

class QueryError(ColonyError):
    """Base of query errors."""


class SqlError(QueryError):
    """The SQL does not parse or plan (syntax, unknown table or column, unsupported function)."""


class UnknownTable(SqlError):
    """The SQL names a table the colony does not hold."""


class UnknownColumn(SqlError):
    """The SQL names a column its table does not have."""


class UnsupportedFunction(SqlError):
    """The SQL uses a function the device engine does not provide."""


class DeadlineExceeded(RuntimeFailure, TimeoutError):
    """Work did not finish within its deadline and was stopped; every deadline in Colony raises it
    (a call's ``timeout=`` or ``runtime.call_timeout_s``, a query's ``timeout_s``).

    ``device`` names the device that did not answer and ``timeout_s`` the deadline."""

    def __init__(self, message: str, device: str | None = None, timeout_s: float | None = None) -> None:
        super().__init__(message)
        self.device, self.timeout_s = device, timeout_s

    def __reduce__(self):
        return (type(self), (str(self), self.device, self.timeout_s))


class QueryTimeout(QueryError, DeadlineExceeded):
    """The query ran past its deadline; its work was stopped."""


class QueryCancelled(QueryError):
    """The query was cancelled by its client (a Flight SQL cancel, Ctrl-C); its work was stopped."""


class ResultTooLarge(QueryError):
    """The result is larger than the configured cap; add a LIMIT or an aggregate."""


class QueryMemoryExceeded(QueryError):
    """The query needs more memory than the device allows it."""


# -- store.routing ---------------------------------------------------------------------------------

class RoutingError(ColonyError):
    """A key or pool cannot be routed to a member device."""


# -- store.objects ---------------------------------------------------------------------------------

class StoreError(ColonyError):
    """Base of object-store errors."""


class UnknownPool(StoreError):
    """The pool is not defined on this device."""


class UnknownKey(StoreError):
    """No object under that key in the pool."""


class ObjectTooLarge(StoreError):
    """The object fits neither the memory budget nor the free spill space.

    ``size`` and ``capacity`` (memory + disk budget) tell a producer whether waiting can
    ever help (back-pressure) or the object can never fit.
    """

    size: int = 0
    capacity: int = 0


# -- codec header checks, store integrity, service arguments (issue 14) ----------------------------

class CorruptHeader(ChecksumMismatch):
    """An object header fails its checksum: some field (a count, a length) was changed."""


class ObjectTooBig(BadLength, CorruptObject):
    """An object header claims more bytes than its codec can produce or this process may allocate."""


class InvalidArgument(ColonyError, ValueError):
    """A service call argument is outside what the service accepts (a size, a count, a payload)."""


# -- runtime deadlines and device faults (one type per fault, shared by every deadline in Colony) --


class DeviceLost(RuntimeFailure):
    """A device's actor died (killed, crashed, its node gone) while a call was in flight;
    ``device`` names it. Ray restarts it (``runtime.max_restarts``); calls are not replayed."""

    def __init__(self, message: str, device: str | None = None) -> None:
        super().__init__(message)
        self.device = device

    def __reduce__(self):
        return (type(self), (str(self), self.device))


class ServiceFailed(ColonyError):
    """A service raised an error that is not a Colony error (a bug or an unexpected input);
    ``device``, ``error_type`` and the message say where and what."""

    def __init__(self, message: str, device: str | None = None, error_type: str | None = None) -> None:
        super().__init__(message)
        self.device, self.error_type = device, error_type

    def __reduce__(self):
        return (type(self), (str(self), self.device, self.error_type))


class ObjectLost(UnknownKey):
    """An acknowledged object is gone: it failed its checksum on spill read-back or recovery
    and was quarantined, or it lived only in a memory-only pool's memory when its device
    restarted. There are no replicas: put it again from its source (use a durable pool for
    objects that must survive a restart)."""


# -- gateway (Flight SQL) -----------------------------------------------------------------
class GatewayError(ColonyError):
    """A Flight SQL request the colony gateway refuses (writes, unknown handles, bad parameters)."""


# -- services.jobstore / drivers.jobstore ------------------------------------------------------------

class JobStoreError(StoreError):
    """The job-local store (colony jobstore) cannot do what was asked."""


class NoSuchFile(JobStoreError, UnknownKey):
    """No committed file under that path in the job's store (uncommitted writes are invisible)."""


class WriteFailed(JobStoreError):
    """A job-store write did not commit (a device failed or refused a chunk); nothing was
    published, the file keeps its previous committed version (if any). Retry the write."""


class CommitRefused(JobStoreError):
    """The metadata device found a write's chunks missing or of the wrong size; it published nothing."""


class StaleCalibration(ColonyError):
    """A stored calibration no longer matches this device or this build (different features,
    fingerprint or software); recalibrate (``colony query --recalibrate``)."""


class DeviceBusy(QueryError):
    """The device's bounded query queue is full; retry later or run the query with placement back."""
