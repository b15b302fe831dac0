"""The PDF-download guard against every IANA special-purpose block, IPv4 and IPv6, and the
IPv6 forms that carry an IPv4 address.

The tables below are IANA's registries as data, copied row by row (block, name,
"globally reachable"), so that any block the guard lets through fails here:
- https://www.iana.org/assignments/iana-ipv4-special-registry (updated 2024-06)
- https://www.iana.org/assignments/iana-ipv6-special-registry (updated 2025-01)
plus the multicast blocks (RFC 5771, RFC 4291) and, for IPv6, space outside 2000::/3.
Every row is refused, "globally reachable: true" ones included (anycast service addresses,
AS112, AMT: no PDF is served from them); the well-known NAT64 prefix and IPv4-mapped
addresses are judged by the IPv4 address they carry.
"""

from __future__ import annotations

import ipaddress

import pytest

from papers.pdf.addresses import address_allowed

IPV4_SPECIAL = [
    ("0.0.0.0/8", '"This network"', False),
    ("0.0.0.0/32", '"This host on this network"', False),
    ("10.0.0.0/8", "Private-Use", False),
    ("100.64.0.0/10", "Shared Address Space", False),
    ("127.0.0.0/8", "Loopback", False),
    ("169.254.0.0/16", "Link Local", False),
    ("172.16.0.0/12", "Private-Use", False),
    ("192.0.0.0/24", "IETF Protocol Assignments", False),
    ("192.0.0.0/29", "IPv4 Service Continuity Prefix", False),
    ("192.0.0.8/32", "IPv4 dummy address", False),
    ("192.0.0.9/32", "Port Control Protocol Anycast", True),
    ("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", True),
    ("192.0.0.170/32", "NAT64/DNS64 Discovery", False),
    ("192.0.0.171/32", "NAT64/DNS64 Discovery", False),
    ("192.0.2.0/24", "Documentation (TEST-NET-1)", False),
    ("192.31.196.0/24", "AS112-v4", True),
    ("192.52.193.0/24", "AMT", True),
    ("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", None),
    ("192.168.0.0/16", "Private-Use", False),
    ("192.175.48.0/24", "Direct Delegation AS112 Service", True),
    ("198.18.0.0/15", "Benchmarking", False),
    ("198.51.100.0/24", "Documentation (TEST-NET-2)", False),
    ("203.0.113.0/24", "Documentation (TEST-NET-3)", False),
    ("240.0.0.0/4", "Reserved", False),
    ("255.255.255.255/32", "Limited Broadcast", False),
    ("224.0.0.0/4", "Multicast (RFC 5771)", False),
]

IPV6_SPECIAL = [
    ("::1/128", "Loopback Address", False),
    ("::/128", "Unspecified Address", False),
    ("::ffff:0:0/96", "IPv4-mapped Address", False),
    ("64:ff9b::/96", "IPv4-IPv6 Translat.", True),
    ("64:ff9b:1::/48", "IPv4-IPv6 Translat. (local use)", False),
    ("100::/64", "Discard-Only Address Block", False),
    ("100:0:0:1::/64", "Dummy IPv6 Prefix", False),
    ("2001::/23", "IETF Protocol Assignments", False),
    ("2001::/32", "TEREDO", None),
    ("2001:1::1/128", "Port Control Protocol Anycast", True),
    ("2001:1::2/128", "Traversal Using Relays around NAT Anycast", True),
    ("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", True),
    ("2001:2::/48", "Benchmarking", False),
    ("2001:3::/32", "AMT", True),
    ("2001:4:112::/48", "AS112-v6", True),
    ("2001:10::/28", "Deprecated (previously ORCHID)", None),
    ("2001:20::/28", "ORCHIDv2", True),
    ("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", True),
    ("2001:db8::/32", "Documentation", False),
    ("2002::/16", "6to4", None),
    ("2620:4f:8000::/48", "Direct Delegation AS112 Service", True),
    ("3fff::/20", "Documentation", False),
    ("5f00::/16", "Segment Routing (SRv6) SIDs", False),
    ("fc00::/7", "Unique-Local", False),
    ("fe80::/10", "Link-Local Unicast", False),
    ("ff00::/8", "Multicast (RFC 4291)", False),
    ("::/8", "Outside global unicast 2000::/3 (IPv4-compatible ::a.b.c.d)", False),
    ("4000::/2", "Outside global unicast 2000::/3 (unassigned)", False),
]

# Judged by the IPv4 address they carry, so they are tested with one below.
EMBEDDING = {"::ffff:0:0/96", "64:ff9b::/96"}

PUBLIC_IPV4 = ["8.8.8.8", "1.1.1.1", "128.0.0.1", "193.0.6.139"]
PUBLIC_IPV6 = ["2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "2001:4860:4860::8888"]


def samples(block: str) -> list[str]:
    """The first, a middle and the last address of `block`."""
    network = ipaddress.ip_network(block)
    first, last = int(network.network_address), int(network.broadcast_address)
    cls = type(network.network_address)
    return sorted({str(cls(first)), str(cls((first + last) // 2)), str(cls(last))})


def non_global_ipv4() -> list[str]:
    return sorted({address for block, _, _ in IPV4_SPECIAL for address in samples(block)})


@pytest.mark.parametrize(
    ("block", "name"),
    [(block, name) for block, name, _ in IPV4_SPECIAL + IPV6_SPECIAL if block not in EMBEDDING],
)
def test_every_special_purpose_block_is_refused(block: str, name: str) -> None:
    allowed = [address for address in samples(block) if address_allowed(address)]
    assert allowed == [], f"{block} ({name})"


@pytest.mark.parametrize("address", PUBLIC_IPV4 + PUBLIC_IPV6)
def test_public_unicast_addresses_are_allowed(address: str) -> None:
    assert address_allowed(address)


@pytest.mark.parametrize("prefix", ["::ffff:", "64:ff9b::"])
def test_an_embedded_ipv4_address_is_judged_as_itself(prefix: str) -> None:
    refused = [address for address in non_global_ipv4() if address_allowed(prefix + address)]
    assert refused == []
    assert all(address_allowed(prefix + address) for address in PUBLIC_IPV4)


def test_nat64_of_ten_zero_zero_one_is_refused() -> None:
    # 10.0.0.1 through a NAT64 gateway, written the way a resolver returns it.
    assert not address_allowed("64:ff9b::a00:1")


@pytest.mark.parametrize("address", PUBLIC_IPV4)
@pytest.mark.parametrize(
    "form",
    [
        "64:ff9b:1::{v4}",  # local-use NAT64: the site's own network behind it
        "2002:{hex}::1",  # 6to4
        "2001:0:{hex}::1",  # Teredo, server address in bits 32-63
        "::{v4}",  # IPv4-compatible (deprecated)
        "::ffff:0:{v4}",  # IPv4-translated (deprecated)
    ],
)
def test_tunnel_and_deprecated_forms_are_refused_whatever_they_carry(
    form: str, address: str
) -> None:
    packed = ipaddress.IPv4Address(address).packed.hex()
    candidate = form.format(v4=address, hex=f"{packed[:4]}:{packed[4:]}")
    assert not address_allowed(candidate)


def test_a_zone_suffix_does_not_change_the_answer() -> None:
    assert not address_allowed("fe80::1%eth0")
