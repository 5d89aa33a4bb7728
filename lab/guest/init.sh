#!/bin/sh
# Runs inside the guest as the last step of /lab/init: prepares the two-NIC RDMA
# wiring, installs rdmaspy from the staged working tree, then runs the scenario.
# Everything the host needs back goes to /lab/share/out; "status" is written last.
S=/lab/share
OUT=$S/out
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8
set -u
# siw (and every provider that pins user memory) is bound by RLIMIT_MEMLOCK (8 MiB).
ulimit -l unlimited
t0=$(cut -d' ' -f1 /proc/uptime)
echo "lab: guest up at ${t0}s, kernel $(uname -r)"
mkdir -p "$OUT"
. "$S/guest/lib.sh"

lab_network > "$OUT/network.log" 2>&1 || { echo "lab: network setup failed"; cat "$OUT/network.log"; echo 90 > "$OUT/status"; exit 0; }
lab_install_rdmaspy > "$OUT/install.log" 2>&1 || { echo "lab: rdmaspy install failed"; tail -20 "$OUT/install.log"; echo 91 > "$OUT/status"; exit 0; }

set -- $(cat "$S/scenario")
scenario=$1; shift
echo "lab: scenario $scenario $* (ready after $(cut -d' ' -f1 /proc/uptime)s)"
rc=0
sh "$S/guest/scenario-$scenario.sh" "$@" || rc=$?
dmesg > "$OUT/dmesg.log" 2>&1
echo "lab: scenario $scenario finished with status $rc at $(cut -d' ' -f1 /proc/uptime)s"
sync
echo $rc > "$OUT/status"
sync
