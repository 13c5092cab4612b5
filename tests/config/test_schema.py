"""Configuration: the embedded default, TOML loading, and errors that name key and fix."""

import pytest

from colony.config import ColonyConfig, default, load, parse_size
from colony.errors import ConfigError
from colony.config.schema import resolve
from colony.errors import UnknownDevice
from colony.errors import UnknownPool


def base(**over):
    d = {"devices": {"h": {"role": "host"}, "n0": {"role": "smartnic"}, "n1": {"role": "smartnic"}},
         "pools": {"p": {"members": ["n0", "n1"], "policy": "hash"}}}
    d.update(over)
    return d


def test_default_has_one_host_and_four_emulated_bluefield2():
    c = default()
    hosts = [d for d in c.devices.values() if d.role == "host"]
    nics = [d for d in c.devices.values() if d.role == "smartnic"]
    assert len(hosts) == 1 and not hosts[0].emulated
    assert [d.name for d in nics] == ["nic0", "nic1", "nic2", "nic3"]
    assert all(d.emulated and d.profile == "bluefield2" and d.threads == 1 for d in nics)
    assert c.pools["default"].members == ("nic0", "nic1", "nic2", "nic3")
    assert c.pools["default"].policy == "tft"
    assert {d.resource for d in c.devices.values()} == {f"colony_{n}" for n in c.devices}


def test_toml_file_roundtrip(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('[colony]\nname = "lab"\n[devices.h]\nrole = "host"\n[devices.d]\nrole = "csd"\n'
                 'memory = "1GiB"\nlink_gbps = 10\n[pools.blocks]\nmembers = "role:csd"\n')
    c = load(p)
    assert c.name == "lab" and c.devices["d"].memory == 1 << 30 and c.devices["d"].link_gbps == 10.0
    assert c.pools["blocks"].members == ("d",) and c.pools["blocks"].policy == "tft"
    assert resolve(str(p)).name == "lab"
    assert resolve(None).name == "default"


@pytest.mark.parametrize("data,key,fix", [
    (base(colony={"nmae": "x"}), "colony.nmae", "remove it"),
    (base(devices={"h": {"role": "gpu"}}), "devices.h.role", "use one of"),
    (base(devices={"h": {}}), "devices.h.role", "add role"),
    (base(devices={"h": {"role": "host", "memory": "lots"}}), "devices.h.memory", "512MiB"),
    (base(devices={"h": {"role": "smartnic", "profile": "bf9"}}), "devices.h.profile", "define [profiles.bf9]"),
    (base(pools={"p": {"members": ["n0", "zz"]}}), "pools.p.members", "use one of"),
    (base(pools={"p": {"members": ["n0"], "policy": "random"}}), "pools.p.policy", "'tft', 'hash'"),
    (base(pools={"p": {"policy": "tft"}}), "pools.p.members", "list the member devices"),
    (base(services={"nosuch": {"devices": "all"}}), "services.nosuch", "use one of"),
    (base(services={"objects": {"devices": "all"}}), "services.objects", "remove this table"),
    (base(runtime={"backpressure": "drop"}), "runtime.backpressure", "'block', 'raise'"),
    (base(runtime={"max_concurrency": 1}), "runtime.max_concurrency", ">= 2"),
    (base(devices={"h": {"role": "host", "resources": {"x": 1}}, "g": {"role": "host", "resources": {"x": 1}}}),
     "devices.g.resources", "its own pinning resource"),
    (base(devices={"9bad": {"role": "host"}}), "devices.9bad", "use a letter"),
    ({"devices": {}}, "devices", "add at least one"),
])
def test_every_mistake_names_key_and_fix(data, key, fix):
    with pytest.raises(ConfigError) as e:
        ColonyConfig.from_dict(data)
    assert f"'{key}'" in str(e.value) and fix in str(e.value)


def test_bad_toml_syntax_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        ColonyConfig.from_toml("[devices\n")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load(tmp_path / "missing.toml")


def test_custom_profile_and_overrides():
    c = ColonyConfig.from_dict(base(profiles={"slow": {"base": "bluefield2", "threads": 2, "link_gbps": 1}},
                                    devices={"h": {"role": "host"},
                                             "n0": {"role": "smartnic", "profile": "slow", "disk": 0},
                                             "n1": {"role": "smartnic", "threads": 3, "cores": [0]}}))
    assert c.devices["n0"].threads == 2 and c.devices["n0"].link_gbps == 1.0 and c.devices["n0"].disk == 0
    assert c.devices["n1"].threads == 3 and c.devices["n1"].cores == (0,)
    assert c.devices["h"].threads >= 1 and not c.devices["h"].emulated


def test_service_placement_selectors():
    c = ColonyConfig.from_dict(base(services={"device": {"devices": ["role:smartnic", "h"], "options": {}}}))
    assert c.services["device"].devices == ("n0", "n1", "h")
    assert c.device_services("n0") == {"device": {}}
    assert "device" in default().device_services("nic2")
    assert c.device_pools("n1") == ["p"]
    with pytest.raises(UnknownDevice, match="unknown device 'zz'"):
        c.device("zz")
    with pytest.raises(UnknownPool, match=r"add a \[pools.q\] table"):
        c.pool("q")


def test_parse_size_units():
    assert parse_size("512MiB") == 512 << 20
    assert parse_size("4 GB") == 4 * 10**9
    assert parse_size(7) == 7
    for bad in (-1, "x", True, 1.5):
        with pytest.raises(ConfigError):
            parse_size(bad)


def test_budgets_and_spill_root_overrides(tmp_path):
    c = default().with_budgets(memory="64MiB", disk="1GiB").with_spill_root(tmp_path)
    assert c.devices["nic0"].memory == 64 << 20 and c.devices["nic0"].disk == 1 << 30
    assert c.devices["host0"].memory == 0
    assert c.devices["nic2"].spill_dir == str(tmp_path / "nic2")
