"""Which network addresses a PDF download may connect to: globally routable unicast only.

The rule does not lean on `ipaddress.is_global`, whose tables differ between Python
versions (3.12 calls 64:ff9b::a00:1, i.e. 10.0.0.1 through a NAT64 gateway, global). It is:

- IPv4: refused inside any block of IANA's IPv4 special-purpose registry, multicast
  (224.0.0.0/4) and the reserved 240.0.0.0/4 included; everything else is allowed.
- IPv6: only global unicast space (2000::/3) outside every block of IANA's IPv6
  special-purpose registry, with two forms judged by the IPv4 address they carry, because
  the packet ends up there: IPv4-mapped `::ffff:a.b.c.d` (the kernel connects over IPv4)
  and the well-known NAT64 prefix `64:ff9b::/96` (the gateway forwards to a.b.c.d).
- Refused whatever they carry: 6to4 (2002::/16) and Teredo (2001::/32) tunnel to an IPv4
  address the address itself names, through relays we do not control; local-use NAT64
  (64:ff9b:1::/48) is a site's own translator, so its IPv4 side is the site's network;
  IPv4-compatible `::a.b.c.d` and IPv4-translated `::ffff:0:a.b.c.d` are deprecated and lie
  outside 2000::/3. No publisher serves PDFs only from such addresses.

The blocks with "globally reachable: true" inside the registries (anycast service addresses
such as 192.0.0.9/32, AS112, AMT, ORCHIDv2) are refused too: no PDF is served from them.
"""

from __future__ import annotations

import ipaddress

# IANA IPv4 Special-Purpose Address Registry
# (https://www.iana.org/assignments/iana-ipv4-special-registry), plus multicast (RFC 5771).
_IPV4_REFUSED = tuple(
    ipaddress.IPv4Network(block)
    for block in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
        "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15",
        "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    )
)  # fmt: skip

# IANA IPv6 Special-Purpose Address Registry
# (https://www.iana.org/assignments/iana-ipv6-special-registry) inside 2000::/3; the
# blocks outside it (::/128, ::1, ::ffff:0:0/96, 64:ff9b::/96, 64:ff9b:1::/48, 100::/64,
# 5f00::/16, fc00::/7, fe80::/10, multicast ff00::/8) fail the 2000::/3 test already.
_IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_IPV6_REFUSED = tuple(
    ipaddress.IPv6Network(block)
    for block in (
        "2001::/23", "2001:db8::/32", "2002::/16", "2620:4f:8000::/48", "3fff::/20",
    )
)  # fmt: skip
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def address_allowed(address: str) -> bool:
    """Whether a download may connect to `address` (text, an IPv6 zone suffix ignored):
    globally routable unicast only, by the rules in the module docstring."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv4Address):
        return _ipv4_allowed(ip)
    if ip.ipv4_mapped is not None:
        return _ipv4_allowed(ip.ipv4_mapped)
    if ip in _NAT64:
        return _ipv4_allowed(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return ip in _IPV6_GLOBAL_UNICAST and not any(ip in block for block in _IPV6_REFUSED)


def _ipv4_allowed(ip: ipaddress.IPv4Address) -> bool:
    return not any(ip in block for block in _IPV4_REFUSED)
