"""The runtime's data plane on the 3-node session colony: every byte on one counted link,
bulk objects over the devices' Flight endpoints (token-authenticated), SDMS-style inject
handles and the four serialization placements."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.flight as fl
import pytest

from colony import codec
from colony.errors import ObjectTooLarge, UnknownKey, UnknownPool


def _links(colony) -> dict:
    return {ln["link"]: ln for ln in colony.links()}


def _dir(colony, link: str, direction: str) -> dict:
    return _links(colony).get(link, {}).get("directions", {}).get(direction, {"bytes": 0, "transfers": 0})


def _table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"x": rng.random(rows), "id": np.arange(rows, dtype=np.int64)})


def test_small_and_bulk_puts_take_their_transport_and_are_counted_on_the_client_link(ray_colony):
    c = ray_colony
    small, big = _table(100, 1), _table(300_000, 2)            # 1.6 kB (Ray) and 4.8 MB (Flight)
    assert not c.transfers.bulk(codec.pack(small).size) and c.transfers.bulk(big.nbytes)
    dev_s, dev_b = c.owner("default", "dp/1"), c.owner("default", "dp/2")
    before_s = _dir(c, f"client<->{dev_s}", f"client->{dev_s}")["bytes"]
    before_b = _dir(c, f"client<->{dev_b}", f"client->{dev_b}")["bytes"]
    e1 = c.put("default", "dp/1", small)
    e2 = c.put("default", "dp/2", big)
    assert c.get("default", "dp/1")[0].equals(small)
    assert c.get("default", "dp/2")[0].equals(big)
    # the packed objects crossed the client's link to their owners, in and out, and were counted
    assert _dir(c, f"client<->{dev_s}", f"client->{dev_s}")["bytes"] - before_s >= e1.nbytes
    assert _dir(c, f"client<->{dev_b}", f"client->{dev_b}")["bytes"] - before_b >= e2.nbytes
    assert _dir(c, f"client<->{dev_b}", f"{dev_b}->client")["bytes"] >= e2.nbytes
    c.drop("default", "dp/1")
    c.drop("default", "dp/2")


def test_status_shows_every_link_with_bytes_per_direction(ray_colony):
    c = ray_colony
    c.call("nic1", "objects", "info")
    st = {s["device"]: s for s in c.status()}
    names = [ln["link"] for ln in st["nic1"]["links"]]
    assert "client<->nic1" in names
    ln = next(x for x in st["nic1"]["links"] if x["link"] == "client<->nic1")
    assert set(ln["directions"]) == {"client->nic1", "nic1->client"}
    assert ln["directions"]["client->nic1"]["transfers"] >= 1
    assert st["nic1"]["flight"].startswith("grpc://")
    # start-up's objects are frozen: a full collection does not walk the libraries' ~100k
    g = st["nic1"]["gc"]
    assert g["frozen"] > 20_000 and len(g["collections"]) == len(g["pause_s"]) == len(g["longest_s"]) == 3
    assert all(t >= m >= 0 for t, m in zip(g["pause_s"], g["longest_s"]))


def test_flight_endpoint_refuses_a_client_without_the_token(ray_colony):
    loc = ray_colony.transfers.location("nic0")
    client = fl.FlightClient(loc)
    bad = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer not-the-token")])
    with pytest.raises(fl.FlightUnauthenticatedError):
        client.do_get(fl.Ticket(b'{"op": "blob", "nbytes": 8}'), options=bad).read_all()
    with pytest.raises(fl.FlightUnauthenticatedError):
        client.do_get(fl.Ticket(b'{"op": "blob", "nbytes": 8}')).read_all()
    client.close()
    # and the colony's own client, with the token, is served
    assert ray_colony.transfers.blob("nic0", 1 << 20).size == 1 << 20


@pytest.mark.parametrize("serialize", ["inflight", "device", "host"])
def test_inject_placements_store_the_same_rows_over_flight(ray_colony, serialize):
    c = ray_colony
    t = _table(200_000, 3)                                       # 3.2 MB: Flight
    rep = c.inject(t, device="nic2", pool="inject", key_prefix=f"pl-{serialize}/", batch_rows=100_000,
                   serialize=serialize)
    assert rep.serialize == serialize and rep.batches == 2
    got = pa.concat_tables([c.get("inject", e.key)[0] for e in sorted(rep.entries, key=lambda e: e.key)])
    assert got.num_rows == t.num_rows and sorted(got.column("id").to_pylist()) == list(range(t.num_rows))
    for e in rep.entries:
        c.drop("inject", e.key)


def test_inject_none_placement_moves_bytes_but_stores_nothing(ray_colony):
    c = ray_colony
    before = _dir(c, "client<->nic3", "client->nic3")["bytes"]
    rep = c.inject(_table(150_000, 4), device="nic3", pool="inject", key_prefix="none/", serialize="none")
    assert rep.entries == [] and c.list("inject", "none/") == []
    assert _dir(c, "client<->nic3", "client->nic3")["bytes"] - before >= rep.bytes


def test_inject_async_returns_a_handle_before_the_bytes_move(ray_colony):
    c = ray_colony
    t = _table(400_000, 5)
    h = c.inject_async(t, device="nic0", pool="inject", key_prefix="async/", batch_rows=100_000)
    assert h.host_s < 0.05                      # initiating does not wait for the transfer
    rep = h.wait(timeout=120)
    assert h.done() and h.reusable() and h.bytes == t.nbytes
    assert rep.rows == t.num_rows and len(rep.entries) == 4 and rep.host_s == h.host_s
    for e in rep.entries:
        c.drop("inject", e.key)


def test_inject_over_ray_and_flight_agree(ray_colony):
    c = ray_colony
    t = _table(100_000, 6)
    for transport in ("ray", "flight"):
        rep = c.inject(t, device="nic1", pool="inject", key_prefix=f"tr-{transport}/", transport=transport,
                       serialize="device")
        assert c.get("inject", rep.entries[0].key)[0].equals(t)
        c.drop("inject", rep.entries[0].key)


def test_flight_put_refusal_is_a_typed_object_too_large(ray_colony):
    c = ray_colony
    was = c.info("nic2")
    c.set_budget("nic2", memory=1 << 20, disk=0)
    try:
        with pytest.raises(ObjectTooLarge):
            c.transfers.put_object("nic2", "default", "huge/2", codec.pack(_table(600_000, 7)))
    finally:
        c.set_budget("nic2", memory=was["memory_budget"], disk=was["disk_budget"])


def test_a_devices_error_over_flight_comes_back_as_its_colony_type(ray_colony):
    with pytest.raises(UnknownKey, match="no key 'no/such/4'") as ei:
        ray_colony.get("default", "no/such/4")                  # a get is one Flight DoGet
    assert type(ei.value) is UnknownKey
    with pytest.raises(UnknownPool, match="nopool"):
        ray_colony.transfers.get_object("nic0", "nopool", "k")
