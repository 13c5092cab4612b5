"""The configuration schema and its validation.

A configuration names the devices (role, Ray resources, budgets, emulation profile),
the pools (members and routing policy) and the services placed on devices. Every
mistake raises :class:`ConfigError` whose message names the key (``devices.nic0.role``)
and says how to fix it. The schema reference lives in docs/runtime.md.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources as _resources
from pathlib import Path
from typing import Any, Mapping

from colony.config.profiles import PROFILES, Profile
from colony.errors import ConfigError

ROLES = ("host", "smartnic", "csd")
POLICIES = ("tft", "hash")
BACKPRESSURE = ("block", "raise")
INJECT_CODECS = ("auto", "none", "inner-lz4", "inner-zstd", "outer-lz4", "outer-zstd", "outer-deflate")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def _err(key: str, problem: str, fix: str) -> ConfigError:
    return ConfigError(f"config key '{key}': {problem}; {fix}")


def parse_size(value: Any, key: str = "size") -> int:
    """Bytes from an int or a string like '512MiB', '4 GB', '1.5GiB'."""
    if isinstance(value, bool):
        raise _err(key, f"{value!r} is not a size", "write bytes as an integer or a string like '512MiB'")
    if isinstance(value, int):
        if value < 0:
            raise _err(key, f"{value} is negative", "use 0 (unlimited/off) or a positive size")
        return value
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m:
            return int(float(m.group(1)) * _UNITS[(m.group(2) or "B").lower()])
    raise _err(key, f"{value!r} is not a size", "write bytes as an integer or a string like '512MiB' or '4GB'")


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    role: str
    profile: str
    emulated: bool
    threads: int                       # resolved thread budget (>= 1)
    memory: int                        # object memory budget in bytes, 0 = unlimited
    disk: int                          # spill budget in bytes, 0 = never spill
    spill_dir: str
    link_gbps: float | None            # paced link, None = unpaced
    pin: bool
    cores: tuple[int, ...] | None      # explicit CPU affinity, None = decided by `pin`
    resources: Mapping[str, float]     # Ray custom resources the device actor requests
    spill_explicit: bool = False       # spill_dir set by the config; else the runtime adds a per-cluster part

    @property
    def label(self) -> str:
        """How output names the device's nature: 'emulated bluefield2' or 'real'."""
        return f"emulated {self.profile}" if self.emulated else "real"

    @property
    def resource(self) -> str:
        """The custom resource that pins this device's actor (a node offers it)."""
        return next(iter(self.resources))


@dataclass(frozen=True)
class PoolSpec:
    name: str
    members: tuple[str, ...]
    policy: str
    durable: bool = False   # acknowledge a put only once the object is fsynced to the device's disk


@dataclass(frozen=True)
class ServicePlacement:
    name: str
    devices: tuple[str, ...]
    options: Mapping[str, Any]
    device_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)   # per device, over options


@dataclass(frozen=True)
class RuntimeSpec:
    object_store_memory: int = 1 << 30
    num_cpus: int | None = None
    temp_dir: str | None = None
    max_restarts: int = 3
    max_concurrency: int = 16
    backpressure: str = "block"        # what inject does when a device is full: block | raise
    backpressure_timeout_s: float = 60.0
    inject_codec: str = "auto"         # codec for injected batches; auto = compress only over slow links
    inject_inflight: int = 4           # batches in flight per injection (pipelining depth)
    slow_link_gbps: float = 10.0       # auto codec compresses below this link rate
    auth: str = "token"                # Ray token authentication for colonies Colony starts
    call_timeout_s: float = 300.0      # deadline of every call to a device (per-call override: timeout=)
    link_latency_s: float = 0.0        # latency each transfer over a paced link is charged
    bulk_bytes: int = 4 << 10          # objects at least this large go over Arrow Flight (bench transfer), smaller over Ray
    same_node_ray_bytes: int = 4 << 20  # ... except to a device on the client's node: from here up, Ray's shared memory (bench transfer)


@dataclass(frozen=True)
class GatewaySpec:
    """``[gateway]``: the Flight SQL gateway (`colony serve --flight-sql`)."""

    address: str = "127.0.0.1:32010"   # host:port; loopback unless told otherwise
    auth: str = "token"                # token (required by default) | none
    token_file: str | None = None      # default: the colony's token (runtime/auth.py)
    tls_cert: str | None = None        # PEM certificate chain; TLS when set (with tls_key)
    tls_key: str | None = None
    max_workers: int = 32              # statements running at once
    statement_ttl_s: float = 600.0     # an unfetched result is dropped after this
    catalog_ttl_s: float = 2.0         # the table list is rescanned when older than this


@dataclass(frozen=True)
class ColonyConfig:
    name: str
    namespace: str
    devices: Mapping[str, DeviceSpec]
    pools: Mapping[str, PoolSpec]
    services: Mapping[str, ServicePlacement]
    runtime: RuntimeSpec = field(default_factory=RuntimeSpec)
    source: str = "<dict>"
    gateway: GatewaySpec = field(default_factory=GatewaySpec)

    # -- construction ---------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> "ColonyConfig":
        return _build(data, source)

    @classmethod
    def from_toml(cls, text: str, source: str = "<string>") -> "ColonyConfig":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{source} is not valid TOML: {e}; fix the syntax at that line") from e
        return _build(data, source)

    # -- queries ----------------------------------------------------------------
    def device(self, name: str) -> DeviceSpec:
        try:
            return self.devices[name]
        except KeyError:
            from colony.errors import UnknownDevice
            raise UnknownDevice(f"unknown device {name!r}; devices in colony {self.name!r}: "
                                f"{sorted(self.devices)}") from None

    def pool(self, name: str) -> PoolSpec:
        try:
            return self.pools[name]
        except KeyError:
            from colony.errors import UnknownPool
            raise UnknownPool(f"unknown pool {name!r}; pools in colony {self.name!r}: {sorted(self.pools)}; "
                              f"add a [pools.{name}] table to the config") from None

    def device_pools(self, device: str) -> list[str]:
        return [p.name for p in self.pools.values() if device in p.members]

    def device_services(self, device: str) -> dict[str, dict]:
        return {s.name: {**s.options, **s.device_options.get(device, {})}
                for s in self.services.values() if device in s.devices}

    def with_runtime(self, **changes: Any) -> "ColonyConfig":
        return replace(self, runtime=replace(self.runtime, **changes))

    def with_budgets(self, memory: int | str | None = None, disk: int | str | None = None,
                     roles: tuple[str, ...] = ("smartnic", "csd")) -> "ColonyConfig":
        """The same colony with other memory/disk budgets on devices of ``roles`` (tests, benches)."""
        devs = {}
        for n, d in self.devices.items():
            if d.role in roles:
                d = replace(d, memory=parse_size(memory, "memory") if memory is not None else d.memory,
                            disk=parse_size(disk, "disk") if disk is not None else d.disk)
            devs[n] = d
        return replace(self, devices=devs)

    def with_link(self, device: str, gbps: float | None) -> "ColonyConfig":
        """The same colony with ``device``'s link paced at ``gbps`` Gbit/s (None or 0: unpaced):
        what a run-time ``set_link`` changes, so the device's fingerprint follows it."""
        spec = self.device(device)
        return replace(self, devices={**self.devices, device: replace(spec, link_gbps=gbps or None)})

    def with_spill_root(self, root: str | os.PathLike) -> "ColonyConfig":
        """The same colony with every device spilling under ``root/<device>`` (tests, benches)."""
        devs = {n: replace(d, spill_dir=str(Path(root) / n), spill_explicit=True) for n, d in self.devices.items()}
        return replace(self, devices=devs)


# -- validation ---------------------------------------------------------------------------
_TOP = {"colony", "runtime", "profiles", "devices", "pools", "services", "gateway"}
_DEVICE_KEYS = {"role", "profile", "threads", "memory", "disk", "spill_dir", "link_gbps", "pin", "cores",
                "resources"}
_PROFILE_KEYS = {"emulated", "threads", "memory", "disk", "link_gbps", "pin", "description", "base"}


def _table(data: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise _err(key, f"expected a table, got {type(data).__name__}", f"write it as [{key}] with keys below it")
    return data


def _unknown(data: Mapping, allowed: set[str], key: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        where = f"{key}.{extra[0]}" if key else extra[0]
        raise _err(where, "is not a known key", f"remove it or use one of {sorted(allowed)}")


def _int(v: Any, key: str, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise _err(key, f"{v!r} is not an integer >= {lo}", f"write an integer >= {lo}")
    return v


def _num(v: Any, key: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise _err(key, f"{v!r} is not a positive number", "write a positive number (e.g. 12.5)")
    return float(v)


def _choice(v: Any, options: tuple[str, ...], key: str) -> str:
    if v not in options:
        raise _err(key, f"{v!r} is not allowed", f"use one of {list(options)}")
    return v


def _name(v: str, key: str) -> str:
    if not isinstance(v, str) or not _NAME.match(v):
        raise _err(key, f"name {v!r} is not valid",
                   "use a letter followed by letters, digits, '_' or '-' (at most 63 characters)")
    return v


def _profiles(data: Mapping) -> dict[str, Profile]:
    out = dict(PROFILES)
    for name, spec in _table(data, "profiles").items():
        key = f"profiles.{_name(name, f'profiles.{name}')}"
        spec = _table(spec, key)
        _unknown(spec, _PROFILE_KEYS, key)
        base_name = spec.get("base", "bluefield2")
        if base_name not in out:
            raise _err(f"{key}.base", f"unknown profile {base_name!r}", f"use one of {sorted(out)}")
        b = out[base_name]
        out[name] = Profile(
            name=name,
            emulated=bool(spec.get("emulated", b.emulated)),
            threads=_int(spec.get("threads", b.threads), f"{key}.threads"),
            memory=parse_size(spec.get("memory", b.memory), f"{key}.memory"),
            disk=parse_size(spec.get("disk", b.disk), f"{key}.disk"),
            link_gbps=_num(spec["link_gbps"], f"{key}.link_gbps") if "link_gbps" in spec else b.link_gbps,
            pin=bool(spec.get("pin", b.pin)),
            description=str(spec.get("description", f"custom profile based on {base_name}")))
    return out


def _spill_root(colony: str) -> Path:
    base = os.environ.get("COLONY_SPILL_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "colony" / "spill"
    return root / colony


def _device(name: str, spec: Mapping, profiles: dict[str, Profile], colony: str) -> DeviceSpec:
    key = f"devices.{_name(name, f'devices.{name}')}"
    spec = _table(spec, key)
    _unknown(spec, _DEVICE_KEYS, key)
    if "role" not in spec:
        raise _err(f"{key}.role", "is missing", f"add role = one of {list(ROLES)}")
    role = _choice(spec["role"], ROLES, f"{key}.role")
    prof_name = spec.get("profile", "host" if role == "host" else "bluefield2")
    if not isinstance(prof_name, str) or prof_name not in profiles:
        raise _err(f"{key}.profile", f"unknown profile {prof_name!r}",
                   f"use one of {sorted(profiles)} or define [profiles.{prof_name}]")
    prof = profiles[prof_name]
    threads = _int(spec.get("threads", prof.threads), f"{key}.threads")
    if threads == 0:
        threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    cores = spec.get("cores")
    if cores is not None:
        if not isinstance(cores, list) or not cores or not all(
                isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cores):
            raise _err(f"{key}.cores", f"{cores!r} is not a list of core numbers", "write e.g. cores = [2, 3]")
        cores = tuple(cores)
    resources = spec.get("resources", {f"colony_{name}": 1})
    resources = _table(resources, f"{key}.resources")
    if not resources:
        raise _err(f"{key}.resources", "is empty", f"name the Ray resource that pins it, e.g. {{colony_{name} = 1}}")
    res = {}
    for r, amount in resources.items():
        if not isinstance(r, str) or not r or isinstance(amount, bool) or not isinstance(amount, (int, float)) \
                or amount <= 0:
            raise _err(f"{key}.resources.{r}", f"{amount!r} is not a positive amount",
                       "write resource = amount, e.g. colony_nic0 = 1")
        res[r] = float(amount)
    link = spec.get("link_gbps", prof.link_gbps)
    if link is not None and link != 0:
        link = _num(link, f"{key}.link_gbps")
    else:
        link = None
    spill = spec.get("spill_dir")
    if spill is not None and not isinstance(spill, str):
        raise _err(f"{key}.spill_dir", f"{spill!r} is not a path", "write a directory path string")
    return DeviceSpec(
        name=name, role=role, profile=prof_name, emulated=prof.emulated, threads=max(1, threads),
        memory=parse_size(spec.get("memory", prof.memory), f"{key}.memory"),
        disk=parse_size(spec.get("disk", prof.disk), f"{key}.disk"),
        spill_dir=str(Path(os.path.expanduser(spill)) if spill else _spill_root(colony) / name),
        link_gbps=link, pin=bool(spec.get("pin", prof.pin)), cores=cores, resources=res,
        spill_explicit=spill is not None)


def _select(sel: Any, devices: Mapping[str, DeviceSpec], key: str) -> tuple[str, ...]:
    """Device selectors: a name, "all", or "role:<role>"; a list of those."""
    items = sel if isinstance(sel, list) else [sel]
    out: list[str] = []
    for s in items:
        if not isinstance(s, str):
            raise _err(key, f"{s!r} is not a device selector", "write device names, \"all\" or \"role:smartnic\"")
        if s == "all":
            picked = list(devices)
        elif s.startswith("role:"):
            role = _choice(s[5:], ROLES, key)
            picked = [n for n, d in devices.items() if d.role == role]
        elif s in devices:
            picked = [s]
        else:
            raise _err(key, f"unknown device {s!r}", f"use one of {sorted(devices)}, \"all\" or \"role:<role>\"")
        out.extend(p for p in picked if p not in out)
    if not out:
        raise _err(key, "selects no device", "name at least one device")
    return tuple(out)


def _build(data: Mapping[str, Any], source: str) -> ColonyConfig:
    data = _table(data, "<top level>")
    _unknown(data, _TOP, "")
    colony = _table(data.get("colony", {}), "colony")
    _unknown(colony, {"name", "namespace"}, "colony")
    name = _name(colony.get("name", "default"), "colony.name")
    namespace = _name(colony.get("namespace", "colony"), "colony.namespace")

    rt_in = _table(data.get("runtime", {}), "runtime")
    _unknown(rt_in, set(RuntimeSpec.__dataclass_fields__), "runtime")
    d = RuntimeSpec()
    rt = RuntimeSpec(
        object_store_memory=parse_size(rt_in.get("object_store_memory", d.object_store_memory),
                                       "runtime.object_store_memory"),
        num_cpus=_int(rt_in["num_cpus"], "runtime.num_cpus", 1) if "num_cpus" in rt_in else None,
        temp_dir=str(rt_in["temp_dir"]) if "temp_dir" in rt_in else None,
        max_restarts=-1 if rt_in.get("max_restarts") == -1 else
        _int(rt_in.get("max_restarts", d.max_restarts), "runtime.max_restarts"),
        max_concurrency=_int(rt_in.get("max_concurrency", d.max_concurrency), "runtime.max_concurrency", 2),
        backpressure=_choice(rt_in.get("backpressure", d.backpressure), BACKPRESSURE, "runtime.backpressure"),
        backpressure_timeout_s=_num(rt_in.get("backpressure_timeout_s", d.backpressure_timeout_s),
                                    "runtime.backpressure_timeout_s"),
        inject_codec=_choice(rt_in.get("inject_codec", d.inject_codec), INJECT_CODECS, "runtime.inject_codec"),
        inject_inflight=_int(rt_in.get("inject_inflight", d.inject_inflight), "runtime.inject_inflight", 1),
        slow_link_gbps=_num(rt_in.get("slow_link_gbps", d.slow_link_gbps), "runtime.slow_link_gbps"),
        auth=_choice(rt_in.get("auth", d.auth), ("token", "disabled"), "runtime.auth"),
        call_timeout_s=_num(rt_in.get("call_timeout_s", d.call_timeout_s), "runtime.call_timeout_s"),
        link_latency_s=0.0 if rt_in.get("link_latency_s", 0) == 0 else
        _num(rt_in["link_latency_s"], "runtime.link_latency_s"),
        bulk_bytes=parse_size(rt_in.get("bulk_bytes", d.bulk_bytes), "runtime.bulk_bytes"),
        same_node_ray_bytes=parse_size(rt_in.get("same_node_ray_bytes", d.same_node_ray_bytes),
                                       "runtime.same_node_ray_bytes"))

    profiles = _profiles(data.get("profiles", {}))
    devs_in = _table(data.get("devices", {}), "devices")
    if not devs_in:
        raise _err("devices", "is empty", "add at least one [devices.<name>] table with a role")
    devices = {n: _device(n, s, profiles, name) for n, s in devs_in.items()}
    taken: dict[str, str] = {}
    for n, dspec in devices.items():
        r = dspec.resource
        if r in taken:
            raise _err(f"devices.{n}.resources", f"first resource {r!r} also pins device {taken[r]!r}",
                       "give every device its own pinning resource (listed first)")
        taken[r] = n

    pools: dict[str, PoolSpec] = {}
    for pname, spec in _table(data.get("pools", {}), "pools").items():
        key = f"pools.{_name(pname, f'pools.{pname}')}"
        spec = _table(spec, key)
        _unknown(spec, {"members", "policy", "durable"}, key)
        if "members" not in spec:
            raise _err(f"{key}.members", "is missing", "list the member devices, e.g. members = [\"nic0\", \"nic1\"]")
        members = _select(spec["members"], devices, f"{key}.members")
        durable = spec.get("durable", False)
        if not isinstance(durable, bool):
            raise _err(f"{key}.durable", f"{durable!r} is not true or false", "write durable = true or false")
        if durable:
            diskless = [m for m in members if not devices[m].disk]
            if diskless:
                raise _err(f"{key}.durable", f"member(s) {diskless} have no disk (disk = 0)",
                           "give every member of a durable pool a disk budget, or make the pool memory-only")
        pools[pname] = PoolSpec(pname, members, _choice(spec.get("policy", "tft"), POLICIES, f"{key}.policy"),
                                durable)

    services: dict[str, ServicePlacement] = {}
    svc_in = _table(data.get("services", {}), "services")
    if svc_in:
        from colony.services.base import service_names
        known = service_names()
        for sname, spec in svc_in.items():
            key = f"services.{sname}"
            spec = _table(spec, key)
            _unknown(spec, {"devices", "options", "device_options"}, key)
            if sname not in known:
                raise _err(key, f"unknown service {sname!r}", f"use one of {known} (services register with @service)")
            if sname == "objects":
                raise _err(key, "the objects service is placed on every device already", "remove this table")
            if "devices" not in spec:
                raise _err(f"{key}.devices", "is missing", "name where it runs: a list of devices, \"all\" or "
                           "\"role:smartnic\"")
            opts = _table(spec.get("options", {}), f"{key}.options")
            placed = _select(spec["devices"], devices, f"{key}.devices")
            per_device = {}
            for dname, dopts in _table(spec.get("device_options", {}), f"{key}.device_options").items():
                if dname not in placed:
                    raise _err(f"{key}.device_options.{dname}", "names a device the service is not placed on",
                               f"use one of {list(placed)}")
                per_device[dname] = dict(_table(dopts, f"{key}.device_options.{dname}"))
            services[sname] = ServicePlacement(sname, placed, dict(opts), per_device)
    return ColonyConfig(name=name, namespace=namespace, devices=devices, pools=pools, services=services,
                        runtime=rt, source=source, gateway=_gateway(data.get("gateway", {})))


def _gateway(data: Any) -> GatewaySpec:
    g = _table(data, "gateway")
    _unknown(g, set(GatewaySpec.__dataclass_fields__), "gateway")
    d = GatewaySpec()
    address = g.get("address", d.address)
    if not isinstance(address, str) or not re.match(r"^[^\s:]+:\d{1,5}$", address):
        raise _err("gateway.address", f"{address!r} is not host:port", "write e.g. address = \"127.0.0.1:32010\"")
    paths = {}
    for k in ("token_file", "tls_cert", "tls_key"):
        v = g.get(k)
        if v is not None and not isinstance(v, str):
            raise _err(f"gateway.{k}", f"{v!r} is not a path", "write a file path string")
        paths[k] = os.path.expanduser(v) if v else None
    if bool(paths["tls_cert"]) != bool(paths["tls_key"]):
        raise _err("gateway.tls_cert", "TLS needs both tls_cert and tls_key", "set both (PEM files) or neither")
    return GatewaySpec(address=address, auth=_choice(g.get("auth", d.auth), ("token", "none"), "gateway.auth"),
                       max_workers=_int(g.get("max_workers", d.max_workers), "gateway.max_workers", 1),
                       statement_ttl_s=_num(g.get("statement_ttl_s", d.statement_ttl_s), "gateway.statement_ttl_s"),
                       catalog_ttl_s=_num(g.get("catalog_ttl_s", d.catalog_ttl_s), "gateway.catalog_ttl_s"), **paths)


def load(path: str | os.PathLike) -> ColonyConfig:
    """Read and validate a TOML configuration file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read config file {str(p)!r}: {e.strerror}; check the path") from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {str(p)!r} is not UTF-8 text (byte {e.start}); "
                          "save it as UTF-8 TOML") from e
    return ColonyConfig.from_toml(text, source=str(p))


def default() -> ColonyConfig:
    """The embedded default: one host and four emulated BlueField-2 SmartNICs."""
    text = _resources.files("colony.config").joinpath("default.toml").read_text()
    return ColonyConfig.from_toml(text, source="<embedded default>")


def resolve(config: "ColonyConfig | Mapping | str | os.PathLike | None") -> ColonyConfig:
    """A ColonyConfig from None (embedded default), a dict, a TOML path, or a config."""
    if config is None:
        return default()
    if isinstance(config, ColonyConfig):
        return config
    if isinstance(config, Mapping):
        return ColonyConfig.from_dict(config)
    if isinstance(config, (str, os.PathLike)):
        return load(config)
    raise ConfigError(f"config must be None, a dict, a TOML path or a ColonyConfig, not {type(config).__name__}")
