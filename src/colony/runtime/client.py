"""The Colony client: ``colony.connect(config, address)`` and the :class:`Colony` handle.

It starts a local Ray colony (or attaches to a running cluster), creates one device
actor per configured device (pinned by its custom resource, threaded, restartable) and
routes object operations by each pool's policy (TFT or hash).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import ray

from colony.config import ColonyConfig
from colony.config.schema import _select, resolve as resolve_config
from colony.errors import RuntimeFailure, UnknownDevice
from colony.runtime import auth, process
from colony.runtime.tempdir import use_temp_dir
from colony.runtime.actor import BULK, READY_TIMEOUT_S, DeviceActor, RayPeers, actor_name, pack_tables, warm_devices
from colony.runtime.flight import fetch_large
from colony.runtime.futures import resolve
from colony.store import Entry

log = logging.getLogger(__name__)

DEFAULT_TEMP_ENV = "COLONY_RAY_TEMP_DIR"
FREE_WAIT_S = 5.0       # how long a new device waits for its resource to be handed back before refusing
# how long attaching waits for anything to accept a connection at the cluster's address: Ray's
# own client retried an address where nothing listens for over two minutes (`colony status
# --address` on a stale `colony up` record), logging a warning every few seconds
REACH_TIMEOUT_S = 5.0


def _device_resources(config: ColonyConfig) -> dict[str, float]:
    total: dict[str, float] = {}
    for d in config.devices.values():
        for r, n in d.resources.items():
            total[r] = total.get(r, 0.0) + n
    return total


def ray_start_line(config: ColonyConfig, device: str, head_address: str = "<head-ip>:6379") -> str:
    """The `ray start` command that makes a node offer ``device``."""
    import json
    res = json.dumps(dict(config.devices[device].resources)).replace(" ", "")
    return f"RAY_AUTH_MODE=token ray start --address={head_address} --resources='{res}'"


class Colony(RayPeers):
    """A handle on a running colony. Use :func:`connect` to make one."""

    def __init__(self, config: ColonyConfig | Mapping | str | os.PathLike | None = None,
                 address: str | None = None, *, temp_dir: str | None = None, detached: bool = False,
                 object_store_memory: int | None = None, num_cpus: int | None = None,
                 create: bool = True) -> None:
        super().__init__(resolve_config(config))
        self._create = create
        rt = self.config.runtime
        self.auth_mode = auth.enable(rt.auth)
        self._owns_ray = False
        if ray.is_initialized():
            if address and not _same_cluster(address):
                raise RuntimeFailure(f"this process is already connected to another Ray cluster; cannot attach "
                                     f"to {address!r} too (use one colony per process or call shutdown() first)")
        elif address:
            why = _unreachable(address)
            if why:
                raise RuntimeFailure(f"no Ray cluster answers at {address!r} ({why}); start one (`colony up`) or "
                                     f"pass the head's address (`ray status` on the head prints it)")
            try:
                ray.init(address=address, namespace=self.config.namespace, log_to_driver=False)
            except Exception as e:   # ConnectionError, auth failures, ...
                raise RuntimeFailure(f"cannot attach to the Ray cluster at {address!r}: {e}; is it running "
                                     f"(`ray status --address {address}`) and does this process have its token "
                                     f"(RAY_AUTH_TOKEN or {auth.token_path()})?") from e
        else:
            tmp = temp_dir or rt.temp_dir or os.environ.get(DEFAULT_TEMP_ENV)
            kw: dict[str, Any] = dict(
                num_cpus=num_cpus or rt.num_cpus or os.cpu_count() or 1,
                resources=_device_resources(self.config),
                object_store_memory=object_store_memory or rt.object_store_memory,
                include_dashboard=False, namespace=self.config.namespace, log_to_driver=False)
            if tmp:
                use_temp_dir(tmp)
                kw["_temp_dir"] = tmp
            try:
                ray.init(**kw)
            except Exception as e:
                raise RuntimeFailure(f"cannot start a local Ray colony: {e}") from e
            self._owns_ray = True
        self.auth_mode = auth.current_mode()
        self._check_resources()
        self._detached = detached
        self._created: list[str] = []
        self._actors: dict[str, Any] = {}
        self._start_actors()
        self._seq: dict[str, int] = {}
        self._placed: dict[str, set[str]] = {}
        from colony.runtime.transfer import Transfers
        self.transfers = Transfers(self)

    # -- setup ----------------------------------------------------------------------
    def _check_resources(self) -> None:
        have = ray.cluster_resources()
        missing = [(n, r) for n, d in self.config.devices.items() for r, amt in d.resources.items()
                   if have.get(r, 0) < amt]
        if missing:
            lines = "; ".join(ray_start_line(self.config, n) for n, _ in missing)
            raise RuntimeFailure(
                f"the Ray cluster offers no node for device(s) {sorted({n for n, _ in missing})} (missing resources "
                f"{sorted({r for _, r in missing})}); start a node for each, e.g. {lines}")

    def _wait_free(self, names: list[str], wait_s: float = FREE_WAIT_S) -> None:
        """The resources the devices to be created ask for are free now (or within ``wait_s``,
        while a colony shut down just before hands them back): a device actor waits for its
        resource, so one held by another colony's device would leave this colony waiting until
        its first call's deadline, reported as hung devices."""
        need: dict[str, float] = {}
        for n in names:
            for r, amt in self.config.devices[n].resources.items():
                need[r] = need.get(r, 0.0) + amt
        deadline = time.monotonic() + wait_s
        while True:
            free = ray.available_resources()
            short = sorted(r for r, amt in need.items() if free.get(r, 0.0) < amt)
            if not short:
                return
            if time.monotonic() >= deadline:
                who = sorted(n for n in names if set(self.config.devices[n].resources) & set(short))
                raise RuntimeFailure(
                    f"device(s) {who} of colony {self.config.name!r} cannot start: their Ray resources {short} are "
                    f"held by other actors on this cluster (another colony's devices?); give this colony's devices "
                    f"their own resources (`resources = {{...}}` per device) on a node that offers them, or stop "
                    f"the colony that holds them")
            time.sleep(0.2)

    def _start_actors(self) -> None:
        rt = self.config.runtime
        remote = ray.remote(DeviceActor)
        existing = set()
        found = {}
        for name in self.config.devices:
            try:
                found[name] = ray.get_actor(actor_name(self.config, name), namespace=self.config.namespace)
            except ValueError:
                if not self._create:
                    raise RuntimeFailure(f"device {name!r} of colony {self.config.name!r} is not running on this "
                                         f"cluster; start the colony with `colony up`") from None
        self._wait_free([n for n in self.config.devices if n not in found])
        for name, spec in self.config.devices.items():
            aname = actor_name(self.config, name)
            if name in found:
                handle = found[name]
                existing.add(name)
            else:
                handle = remote.options(
                    name=aname, namespace=self.config.namespace, lifetime="detached" if self._detached else None,
                    resources=dict(spec.resources), num_cpus=0, max_concurrency=rt.max_concurrency,
                    max_restarts=rt.max_restarts, max_task_retries=0,
                    runtime_env={"env_vars": dict(process.DEVICE_ENV)},
                ).remote(self.config, name)
                self._created.append(name)
            self._actors[name] = handle
        try:
            names = list(self._actors)
            resolve([self._actors[n].ping.remote() for n in names], READY_TIMEOUT_S, names)
            # every handler thread of a new device warmed once, before any query pays for it
            cold = warm_devices({n: self._actors[n] for n in self._created if n in self._actors}, rt.max_concurrency,
                                answered=True)
            if cold:
                log.warning("devices %s: not every handler thread could be warmed", cold)
        except Exception:
            self._kill(self._created)
            raise
        if existing:
            log.info("attached to running devices %s", sorted(existing))

    # -- devices ------------------------------------------------------------------------
    def actor(self, device: str):
        try:
            return self._actors[device]
        except KeyError:
            raise UnknownDevice(f"unknown device {device!r}; devices in colony {self.config.name!r}: "
                                f"{sorted(self._actors)}") from None

    handle = actor   # the Colony interface reaches devices through the actors this client holds

    def place(self, service: str, devices: str | Sequence[str] = "all", **options: Any) -> None:
        super().place(service, devices, **options)
        sel = devices if isinstance(devices, str) else list(devices)
        self._placed.setdefault(service, set()).update(_select(sel, self.config.devices, "place.devices"))

    # -- calls: large results over Flight -----------------------------------------------------
    def call(self, device: str, service: str, method: str, *args: Any, timeout: float | None = None,
             **kwargs: Any) -> Any:
        """As :meth:`RayPeers.call`; parts of the result from ``RESULT_FLIGHT_BYTES`` up come
        over the device's Flight endpoint (DoGet), the rest in Ray's reply."""
        return fetch_large(super().call(device, service, method, *args, timeout=timeout, **kwargs),
                           self.transfers.result)

    def _start(self, device: str, service: str, method: str, args: tuple, kwargs: dict, timeout: float | None):
        kwargs[BULK] = True        # this client fetches large result parts over Flight
        return super()._start(device, service, method, args, kwargs, timeout)

    def wait(self, futures, timeout: float | None = None, devices=None):
        return fetch_large(super().wait(futures, timeout, devices), self.transfers.result)

    # -- objects ---------------------------------------------------------------------------
    def put(self, pool: str, key: str, tables, codec: str = "none", threads: int | None = None,
            timeout: float | None = None) -> Entry:
        """Pack ``tables`` (one or a list) into an object here and store it on the key's owner
        (bulk objects over the device's Flight endpoint, small ones over Ray)."""
        buf = tables if isinstance(tables, pa.Buffer) else pack_tables(tables, codec, threads)
        dev = self.owner(pool, key)
        if self.transfers.bulk(buf.size, dev):
            return self.transfers.put_object(dev, pool, key, buf)
        return super().put(pool, key, buf, timeout=timeout)

    def get_object(self, pool: str, key: str, timeout: float | None = None) -> pa.Buffer:
        """The packed object, fetched with Flight DoGet from its owner's endpoint (one round
        trip; faster than a Ray call at every size measured, `colony bench transfer`)."""
        return self.transfers.get_object(self.owner(pool, key), pool, key)

    def list(self, pool: str, prefix: str = "", timeout: float | None = None) -> list[str]:
        p = self.config.pool(pool)
        parts = resolve([self.actor(m).call.remote("objects", "list", pool, prefix) for m in p.members],
                        self._deadline(timeout), list(p.members))
        return sorted(k for part in parts for k in part)

    def entries(self, pool: str, prefix: str = "", timeout: float | None = None) -> list[Entry]:
        p = self.config.pool(pool)
        parts = resolve([self.actor(m).call.remote("objects", "entries", pool, prefix) for m in p.members],
                        self._deadline(timeout), list(p.members))
        return sorted((e for part in parts for e in part), key=lambda e: e.key)

    def drop(self, pool: str, key: str, timeout: float | None = None) -> None:
        dev = self.owner(pool, key)
        resolve(self.actor(dev).call.remote("objects", "drop", pool, key), self._deadline(timeout), dev)

    def set_link(self, device: str, gbps: float | None) -> None:
        """Pace ``device``'s links at ``gbps`` Gbit/s from now on (None: unpaced): its own
        end, and every other device's end of the link to it (a push-back to the host)."""
        self.actor(device)
        self.config = self.config.with_link(device, gbps)    # its fingerprint follows (calibration records)
        names = list(self._actors)
        resolve([self._actors[n].set_link.remote(gbps, device) for n in names], self._deadline(None), names)

    def set_budget(self, device: str, memory: int | None = None, disk: int | None = None) -> dict:
        """Change ``device``'s memory/disk budgets from now on (bytes); returns its store info."""
        return resolve(self.actor(device).set_budget.remote(memory, disk), self._deadline(None), device)

    def info(self, device: str) -> dict:
        return self.call(device, "objects", "info")

    def status(self) -> list[dict]:
        """Per device: role, emulation, memory, objects, load (from the device actors)."""
        names = list(self._actors)
        return resolve([self._actors[n].status.remote() for n in names], 60, names)

    def links(self) -> list[dict]:
        """Every link's counters (bytes, transfers, busy seconds per direction), from the devices."""
        names = list(self._actors)
        return [ln for part in resolve([self._actors[n].link_stats.remote() for n in names], 60, names)
                for ln in part]

    # -- injection ---------------------------------------------------------------------------
    def inject(self, data, device: str | None = None, pool: str = "inject", key_prefix: str = "inject/",
               **kw):
        """Move Arrow data (a table or an iterable of tables/batches) from this process into devices.

        See :func:`colony.runtime.inject.inject`.
        """
        from colony.runtime.inject import inject
        return inject(self, data, device=device, pool=pool, key_prefix=key_prefix, **kw)

    def inject_async(self, data, device: str | None = None, pool: str = "inject", key_prefix: str = "inject/",
                     **kw):
        """Start an injection and return its handle at once (wait / done / reusable / bytes / host_s).

        See :func:`colony.runtime.inject.inject_async`.
        """
        from colony.runtime.inject import inject_async
        return inject_async(self, data, device=device, pool=pool, key_prefix=key_prefix, **kw)

    def seq(self, prefix: str) -> int:
        """The next key number inject uses after ``prefix``."""
        return self._seq.get(prefix, 0)

    def set_seq(self, prefix: str, n: int) -> None:
        self._seq[prefix] = n

    # -- teardown ---------------------------------------------------------------------------
    def _kill(self, names: Iterable[str]) -> None:
        for n in names:
            h = self._actors.get(n)
            if h is not None:
                try:
                    ray.kill(h, no_restart=True)
                except Exception:
                    pass

    def shutdown(self, *, kill_devices: bool | None = None) -> None:
        """Stop the devices this client created (unless detached) and Ray if this client started it."""
        kill = (not self._detached) if kill_devices is None else kill_devices
        self.transfers.close()   # this client's Flight connections
        if kill:
            self._kill(self._created if kill_devices is None else list(self._actors))
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
        self._owns_ray = False

    def __enter__(self) -> "Colony":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


def _unreachable(address: str, timeout_s: float = REACH_TIMEOUT_S) -> str | None:
    """Why nothing accepts a TCP connection at a ``host:port`` GCS address within ``timeout_s``
    (None when something does, and for ``auto`` or ``ray://`` addresses, which Ray resolves)."""
    host, sep, port = address.rpartition(":")
    if address == "auto" or "://" in address or not sep or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout_s):
            return None
    except socket.timeout:
        return f"no answer within {timeout_s:g} s"
    except OSError as e:
        return e.strerror or type(e).__name__


def _same_cluster(address: str) -> bool:
    try:
        cur = ray.get_runtime_context().gcs_address
    except Exception:
        return False
    return address in (cur, "auto") or address.split("//")[-1] == cur


def connect(config: ColonyConfig | Mapping | str | os.PathLike | None = None, address: str | None = None,
            **kw: Any) -> Colony:
    """Start (or attach to) a colony.

    ``config``: None (the embedded default: 1 host + 4 emulated SmartNICs), a dict, a TOML
    path or a :class:`ColonyConfig`. ``address``: a running Ray cluster's GCS address to
    attach to; None starts a local Ray (or reuses the one this process is connected to).
    """
    return Colony(config, address, **kw)
