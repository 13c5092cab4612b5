"""Start the gateway for a colony from its ``[gateway]`` configuration."""

from __future__ import annotations

import os
from pathlib import Path

from colony.config.schema import GatewaySpec
from colony.drivers.catalog import Catalog
from colony.errors import GatewayError
from colony.gateway.server import Gateway


def colony_token(spec: GatewaySpec) -> str | None:
    """The token clients must present: ``token_file``, else the colony's own (Ray) token."""
    if spec.auth == "none":
        return None
    if spec.token_file:
        path = Path(spec.token_file)
    else:
        from colony.runtime import auth
        if os.environ.get("RAY_AUTH_TOKEN"):
            return os.environ["RAY_AUTH_TOKEN"].strip()
        path = auth.token_path()
    try:
        token = path.read_text().strip()
    except OSError as e:
        raise GatewayError(f"cannot read the gateway token from {str(path)!r} ({e.strerror}); start the colony "
                           "with `colony up` (it creates the token) or set [gateway] token_file") from None
    if len(token) < 16:
        raise GatewayError(f"the token in {str(path)!r} is shorter than 16 characters; use a long random token")
    return token


def location(spec: GatewaySpec) -> str:
    return ("grpc+tls://" if spec.tls_cert else "grpc://") + spec.address


def open_gateway(colony, spec: GatewaySpec, name: str = "colony", calibrate=None) -> Gateway:
    """A running (listening) gateway over ``colony``'s tables; call ``serve()`` or ``shutdown()``.
    ``calibrate``: the catalog's (:class:`~colony.drivers.catalog.Catalog`), for devices that
    come to hold data."""
    tls = None
    if spec.tls_cert:
        try:
            tls = (Path(spec.tls_cert).read_bytes(), Path(spec.tls_key).read_bytes())
        except OSError as e:
            raise GatewayError(f"cannot read the TLS certificate/key ({e.filename}: {e.strerror}); check "
                               "[gateway] tls_cert and tls_key") from None
    try:
        return Gateway(Catalog(colony, ttl_s=spec.catalog_ttl_s, calibrate=calibrate), location(spec), token=colony_token(spec), tls=tls,
                       name=name, max_workers=spec.max_workers, statement_ttl_s=spec.statement_ttl_s)
    except OSError as e:
        raise GatewayError(f"cannot listen on {spec.address}: {e}; pick another --flight-sql port") from None
