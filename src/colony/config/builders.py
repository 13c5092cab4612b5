"""Builders for the colonies Colony itself composes: every configuration goes through here.

The CLI, the drivers, the benchmarks, the demo and the tests build their colonies with
these functions (never by editing a TOML dict by hand), so one schema validates them all.
"""

from __future__ import annotations

import copy
import tomllib
from importlib import resources as _resources
from typing import Any, Mapping

from colony.config.schema import ColonyConfig

_PROFILE_OF_ROLE = {"host": "host", "smartnic": "bluefield2", "csd": "csd"}


def default_dict() -> dict[str, Any]:
    """The embedded default (one host, four emulated BlueField-2 SmartNICs) as a plain dict to extend."""
    return tomllib.loads(_resources.files("colony.config").joinpath("default.toml").read_text())


def embedded(*, links_gbps: Mapping[str, float] | None = None, pools: Mapping[str, list[str]] | None = None,
             services: Mapping[str, Mapping[str, Any]] | None = None, name: str | None = None,
             runtime: Mapping[str, Any] | None = None) -> ColonyConfig:
    """The embedded default with paced links, extra pools (``{pool: members}``, TFT) and
    service placements (``{service: {"devices": ..., "options": {...}}}``) replacing its own."""
    d = default_dict()
    for dev, gbps in (links_gbps or {}).items():
        if dev in d["devices"]:
            d["devices"][dev]["link_gbps"] = gbps
    for pool, members in (pools or {}).items():
        d["pools"][pool] = {"members": list(members), "policy": "tft"}
    if services is not None:
        d["services"] = copy.deepcopy(dict(services))
    if name:
        d["colony"]["name"] = name
    d.setdefault("runtime", {}).update(runtime or {})
    return ColonyConfig.from_dict(d, source="<embedded default, built>")


def devices(spec: Mapping[str, Mapping[str, Any]], *, name: str = "local",
            runtime: Mapping[str, Any] | None = None) -> ColonyConfig:
    """A colony from a compact per-device description, for in-process colonies and tests.

    ``spec`` maps a device name to ``role`` (default smartnic), ``threads`` (default 1),
    ``services`` (``{service: options}``), ``pools`` (pool names it is a member of) and
    ``workdir`` (its spill/work directory), ``memory``/``disk`` (budgets, bytes or '512MiB'),
    ``link_gbps`` (its paced link; default: its profile's).
    """
    devs: dict[str, dict] = {}
    pools: dict[str, list[str]] = {}
    placed: dict[str, dict[str, dict]] = {}
    for dname, s in spec.items():
        role = s.get("role", "smartnic")
        d: dict[str, Any] = {"role": role, "profile": _PROFILE_OF_ROLE[role] if role in _PROFILE_OF_ROLE else role,
                             "threads": int(s.get("threads", 1))}
        if s.get("workdir"):
            d["spill_dir"] = str(s["workdir"])
        for k in ("memory", "disk", "link_gbps"):
            if k in s:
                d[k] = s[k]
        devs[dname] = d
        for pool in s.get("pools", ()):
            pools.setdefault(pool, []).append(dname)
        for svc, opts in (s.get("services") or {}).items():
            placed.setdefault(svc, {})[dname] = dict(opts or {})
    services = {svc: {"devices": list(per), "device_options": per} for svc, per in placed.items()}
    return ColonyConfig.from_dict({"colony": {"name": name, "namespace": "colony-local"},
                                   "runtime": dict(runtime or {}), "devices": devs,
                                   "pools": {p: {"members": m, "policy": "tft"} for p, m in pools.items()},
                                   "services": services}, source="<built: devices>")


def csd_colony(n: int, workdir: str, *, name: str | None = None, temp_dir: str | None = None,
               object_store: str = "1GiB", num_cpus: int | None = None) -> ColonyConfig:
    """``n`` emulated CSDs running the nearstore service, block stores under ``workdir``."""
    names = [f"csd{i}" for i in range(n)]
    runtime: dict[str, Any] = {"object_store_memory": object_store, "max_concurrency": 32}
    if temp_dir:
        runtime["temp_dir"] = temp_dir
    if num_cpus:
        runtime["num_cpus"] = num_cpus
    return ColonyConfig.from_dict(
        {"colony": {"name": name or f"nearstore{n}", "namespace": "colony-nearstore"}, "runtime": runtime,
         "devices": {nm: {"role": "csd", "profile": "csd", "spill_dir": f"{workdir}/{nm}"} for nm in names},
         "services": {"nearstore": {"devices": names, "options": {"workdir": workdir}}}},
        source=f"<built: {n} CSDs>")


def query_colony(n_nics: int = 4, *, host_threads: int = 2, nic_threads: int = 1, workdir: str | None = None,
                 query_options: Mapping[str, Any] | None = None) -> ColonyConfig:
    """A host and ``n_nics`` SmartNICs with the query service (the in-process query colony);
    each SmartNIC holds pools ``particles_nic<i>`` and ``particles``."""
    opts = dict(query_options or {})
    spec: dict[str, dict] = {"host": {"role": "host", "threads": host_threads, "services": {"query": opts},
                                      "workdir": workdir}}
    for i in range(n_nics):
        spec[f"nic{i}"] = {"role": "smartnic", "threads": nic_threads, "services": {"query": opts},
                           "pools": [f"particles_nic{i}", "particles"], "workdir": workdir}
    return devices(spec, name="query")


def interference_colony(host_cores: list[int], device_cores: list[int], client_cores: list[int], *,
                        spill_root: str | None = None, temp_dir: str | None = None) -> ColonyConfig:
    """The interference benchmark's colony: the same services once on the host's cores
    (``hostd``/``hostq``, role host) and once on an emulated SmartNIC's cores (``nic0``/``nicq``;
    the query service on its own devices), plus the client side's own host endpoint (``host0``,
    on the client cores). Every device is pinned
    with explicit ``cores`` (CPU affinity), so where a service runs is decided here."""
    devs: dict[str, dict] = {
        "host0": {"role": "host", "profile": "host", "threads": len(client_cores), "cores": list(client_cores)},
        "hostd": {"role": "host", "profile": "host", "threads": len(host_cores), "cores": list(host_cores)},
        "nic0": {"role": "smartnic", "profile": "bluefield2", "threads": len(device_cores),
                 "cores": list(device_cores)},
        # the query service builds statistics on every put, so it gets device processes of its own
        "hostq": {"role": "host", "profile": "host", "threads": len(host_cores), "cores": list(host_cores)},
        "nicq": {"role": "smartnic", "profile": "bluefield2", "threads": len(device_cores),
                 "cores": list(device_cores)},
    }
    if spill_root:
        for n, d in devs.items():
            d["spill_dir"] = f"{spill_root}/{n}"
    runtime: dict[str, Any] = {"object_store_memory": "256MiB", "max_concurrency": 16,
                               "num_cpus": max(1, len(set(host_cores) | set(device_cores) | set(client_cores)))}
    if temp_dir:
        runtime["temp_dir"] = temp_dir
    both = ["hostd", "nic0"]
    return ColonyConfig.from_dict(
        {"colony": {"name": "interference", "namespace": "colony-interference"}, "runtime": runtime,
         "devices": devs,
         "pools": {"ckpt_host": {"members": ["hostd"], "policy": "tft"},
                   "ckpt_dev": {"members": ["nic0"], "policy": "tft"},
                   "particles_host": {"members": ["hostq"], "policy": "tft"},
                   "particles_dev": {"members": ["nicq"], "policy": "tft"}},
         "services": {"jobstore": {"devices": both}, "sift": {"devices": both},
                      "query": {"devices": ["host0", "hostq", "nicq"]}}},
        source="<built: interference>")
