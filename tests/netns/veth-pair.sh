#!/usr/bin/env bash
# Builds (or removes) the capture test network: two network namespaces joined by a veth pair.
#   veth-pair.sh up TAG     namespaces rs-TAG-a / rs-TAG-b, interfaces va-TAG (192.0.2.1) / vb-TAG (192.0.2.2)
#   veth-pair.sh down TAG   removes both namespaces (and with them the veth pair); never fails
# TAG: up to 10 letters or digits, unique per run (interface names are limited to 15 characters).
set -euo pipefail
cmd=${1:-}
tag=${2:-}
if [[ ! $tag =~ ^[A-Za-z0-9]{1,10}$ ]]; then
    echo "usage: $0 up|down TAG (TAG: 1-10 letters or digits)" >&2
    exit 2
fi
ns_a=rs-$tag-a
ns_b=rs-$tag-b


case $cmd in
up)
    "$(dirname "$0")/ensure-deps.sh"      # iproute2 and libpcap when missing
    ip netns add "$ns_a"
    ip netns add "$ns_b"
    trap 'ip netns del "$ns_a" 2>/dev/null; ip netns del "$ns_b" 2>/dev/null' ERR
    ip link add "va-$tag" netns "$ns_a" type veth peer name "vb-$tag" netns "$ns_b"
    for side in a b; do
        ns=rs-$tag-$side
        dev=v$side-$tag
        # no IPv6 chatter (router solicitations, MLD) on the test link
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
        ip -n "$ns" link set lo up
        ip -n "$ns" link set "$dev" up
    done
    ip -n "$ns_a" addr add 192.0.2.1/24 dev "va-$tag"
    ip -n "$ns_b" addr add 192.0.2.2/24 dev "vb-$tag"
    ;;
down)
    ip netns del "$ns_a" 2>/dev/null || true
    ip netns del "$ns_b" 2>/dev/null || true
    ;;
*)
    echo "usage: $0 up|down TAG" >&2
    exit 2
    ;;
esac
