"""Starting the gateway from the `[gateway]` configuration: TLS with a configured
certificate, the token from a file, loopback by default, and the schema's checks."""

import subprocess
import threading

import adbc_driver_flightsql.dbapi as fdb
import pyarrow as pa
import pytest
from adbc_driver_flightsql import DatabaseOptions

from colony.config.builders import devices as devices_config
from colony.config.schema import ColonyConfig, GatewaySpec
from colony.drivers.catalog import ensure_query_service
from colony.errors import ConfigError, GatewayError
from colony.gateway.serve import colony_token, location, open_gateway
from colony.runtime.local import LocalColony


def _cfg(gateway):
    return ColonyConfig.from_dict({"devices": {"h": {"role": "host"}}, "gateway": gateway})


def test_gateway_section_defaults_and_errors():
    g = _cfg({}).gateway
    assert g.address == "127.0.0.1:32010" and g.auth == "token" and g.tls_cert is None
    assert _cfg({"address": "0.0.0.0:4000", "auth": "none"}).gateway.address == "0.0.0.0:4000"
    for bad, key in (({"address": "nowhere"}, "gateway.address"), ({"auth": "maybe"}, "gateway.auth"),
                     ({"tls_cert": "c.pem"}, "gateway.tls_cert"), ({"port": 1}, "gateway.port"),
                     ({"max_workers": 0}, "gateway.max_workers")):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            _cfg(bad)


def test_token_comes_from_the_file_and_must_be_long(tmp_path):
    (tmp_path / "tok").write_text("short\n")
    with pytest.raises(GatewayError, match="shorter than 16"):
        colony_token(GatewaySpec(token_file=str(tmp_path / "tok")))
    with pytest.raises(GatewayError, match="cannot read"):
        colony_token(GatewaySpec(token_file=str(tmp_path / "missing")))
    assert colony_token(GatewaySpec(auth="none")) is None


def test_tls_gateway_from_config_serves_adbc_over_tls(tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True, timeout=60)
    token = "tls-token-0123456789abcdef0123"
    (tmp_path / "tok").write_text(token)
    lc = LocalColony(devices_config({"host": {"role": "host", "threads": 1}, "nic0": {"pools": ["data"]}}, name="tls"))
    ensure_query_service(lc, str(tmp_path / "models"), calib_runs=6, max_rows=30_000)
    lc.put("data", "t/000000", pa.table({"a": [1, 2, 3]}))
    spec = GatewaySpec(address="127.0.0.1:0", token_file=str(tmp_path / "tok"), tls_cert=str(tmp_path / "cert.pem"),
                       tls_key=str(tmp_path / "key.pem"))
    assert location(spec) == "grpc+tls://127.0.0.1:0"
    gw = open_gateway(lc, spec, name="tls")
    threading.Thread(target=gw.serve, daemon=True).start()
    try:
        db = {DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {token}",
              DatabaseOptions.TLS_ROOT_CERTS.value: (tmp_path / "cert.pem").read_text()}
        with fdb.connect(f"grpc+tls://127.0.0.1:{gw.port}", db_kwargs=db, autocommit=True) as conn, \
                conn.cursor() as cur:
            cur.execute("select sum(a) as s from t")
            assert cur.fetchall() == [(6,)]
        with pytest.raises(Exception):                       # plaintext against TLS is refused
            with fdb.connect(f"grpc://127.0.0.1:{gw.port}", db_kwargs={
                    DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {token}"}, autocommit=True) as conn, \
                    conn.cursor() as cur:
                cur.execute("select 1")
    finally:
        gw.shutdown()
