"""Where a server of the pipeline may listen: ``HOST:PORT``, loopback unless allowed otherwise.

Its own module, importing nothing of eagle3tui: the configuration checks an
address with it, and the metrics endpoint binds with it.
"""

from __future__ import annotations

import ipaddress


def listen_address(text: str, allow_remote: bool = False) -> tuple[str, int]:
    """``"127.0.0.1:9464"``, ``"[::1]:9464"`` or ``"localhost:9464"`` as (host, port).

    Raises ValueError, saying why, for a malformed address or one that is not
    loopback while ``allow_remote`` is false (the figures name stages,
    commands' progress and GPUs: not for every host on the network).
    """
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"listen must be HOST:PORT, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost":
        return "127.0.0.1", int(port_text)
    try:
        ip = ipaddress.ip_address(host)
    except ValueError as e:
        raise ValueError(f"listen host must be an IP address or localhost, got {host!r}") from e
    if not ip.is_loopback and not allow_remote:
        raise ValueError(f"listen address {host} is not loopback: other hosts could read the pipeline's "
                         "state (set allow_remote = true in [metrics] to serve them on purpose)")
    return str(ip), int(port_text)
