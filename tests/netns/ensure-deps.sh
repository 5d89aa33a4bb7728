#!/usr/bin/env bash
# Installs what the capture tests need when it is missing (Debian): iproute2 for `ip netns`,
# libpcap0.8 for compiling capture filters.  Needs root only when something is missing.
set -euo pipefail
missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
ldconfig -p 2>/dev/null | grep -q 'libpcap\.so' || missing+=(libpcap0.8)
if ((${#missing[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi
