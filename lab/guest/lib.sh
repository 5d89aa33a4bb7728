# Shell helpers shared by the guest scenarios (sourced).
A=192.0.2.1 B=192.0.2.2

lab_network() {
  # Two NICs cabled together by a qemu hub. Both addresses are local, so the kernel
  # would short-cut through lo: per-NIC tables and policy rules force each packet out
  # of the other NIC, and RDMA-CM needs the matching oif rules (else CM REJ 28).
  set -ex
  ip link set lo up
  ip link set eth0 up; ip link set eth1 up
  ip addr add $A/32 dev eth0; ip addr add $B/32 dev eth1
  sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
  for i in eth0 eth1; do
    sysctl -qw net.ipv4.conf.$i.rp_filter=0 net.ipv4.conf.$i.accept_local=1
  done
  ip route add $B/32 dev eth0 table 100
  ip route add $A/32 dev eth1 table 101
  ip rule add pref 100 iif lo to $B lookup 100
  ip rule add pref 101 iif lo to $A lookup 101
  ip rule add pref 102 oif eth0 to $B lookup 100
  ip rule add pref 103 oif eth1 to $A lookup 101
  ip rule add pref 1000 lookup local
  ip rule del pref 0 lookup local
  ip rule show; ip route show table 100; ip route show table 101
  modprobe rdma_ucm
  set +x
}

lab_rdma_links() {
  # lab_rdma_links rxe|siw: one RDMA device per NIC (rxe0/rxe1 or siw0/siw1).
  local kind=$1
  for l in $(rdma link show 2>/dev/null | awk '{print $2}' | cut -d/ -f1); do rdma link delete "$l" 2>/dev/null; done
  if [ "$kind" = siw ]; then modprobe siw; else modprobe rdma_rxe; fi
  rdma link add ${kind}0 type $kind netdev eth0
  rdma link add ${kind}1 type $kind netdev eth1
  rdma link show
}

lab_install_rdmaspy() {
  set -ex
  # The wheel was built from the working tree in a chroot of this very rootfs (lab/run).
  python3 -m pip install --no-index --no-deps --break-system-packages -q "$S"/wheel/*.whl
  python3 -c "import rdmaspy.traffic.verbs as v; print(\"native hot path:\", v.native_available())"
  set +x
}

CAP_PID=""
cap_start() {
  # cap_start FILE: capture eth0 (both directions of the pair pass it). The TPACKET_V2
  # ring (--immediate-mode) with small slots and a large buffer does not drop.
  tcpdump -i eth0 -n -w "$1" --immediate-mode -s 16384 -B 65536 -U > "$1.log" 2>&1 &
  CAP_PID=$!
  sleep 1
}

cap_stop() {
  # Ask for statistics until every packet the filter received was written.
  local f=$1 i=0
  sleep 0.5
  while [ $i -lt 40 ]; do
    kill -USR1 $CAP_PID 2>/dev/null || break
    sleep 0.25
    c=$(grep -o '[0-9]* packets captured' "$f.log" | tail -1 | cut -d' ' -f1)
    r=$(grep -o '[0-9]* packets received by filter' "$f.log" | tail -1 | cut -d' ' -f1)
    [ -n "$c" ] && [ "$c" = "$r" ] && break
    i=$((i + 1))
  done
  kill -INT $CAP_PID 2>/dev/null; wait $CAP_PID 2>/dev/null
  tail -3 "$f.log"
}

wait_listening() {
  # wait_listening LOG: until `rdmaspy serve` says it listens (at most 120 s).
  local i=0
  while [ $i -lt 600 ] && ! grep -q "listening on" "$1" 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
}

nfs_server_start() {
  # The kernel NFS server on this guest, exporting over RDMA on port 20049 (and TCP for the side
  # programs), past its grace period when this returns.
  modprobe rpcrdma 2>/dev/null || { modprobe svcrdma; modprobe xprtrdma; }
  mkdir -p /proc/fs/nfsd /var/lib/nfs/rpc_pipefs /run/rpcbind /mnt/nfs
  mount -t nfsd nfsd /proc/fs/nfsd
  mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs 2>/dev/null
  rpcbind -w
  exportfs -ra
  # In the foreground, so that what it says (and how it ends) is kept.
  rpc.mountd -F -d all > /lab/share/out/mountd.log 2>&1 &
  # No nfsdcld here: short grace and lease times, or the first open waits 90 s; NLM's grace period
  # (lockd's, which NFSv4 LOCK honours too) as short.
  modprobe lockd && echo 10 > /proc/sys/fs/nfs/nlm_grace_period
  echo 10 > /proc/fs/nfsd/nfsv4gracetime
  echo 10 > /proc/fs/nfsd/nfsv4leasetime
  rpc.nfsd 4
  echo rdma 20049 > /proc/fs/nfsd/portlist
  cat /proc/fs/nfsd/portlist
  sleep 11          # let the grace period pass
}

lab_impair() {
  # lab_impair SPEC: impair the path between the two NICs; prints the tag of the captures' names.
  # SPEC is a comma-separated list (0 or empty: none):
  #   N    N% of the packets each NIC sends dropped before the capture point (netem loss on the way out:
  #        the capture on eth0 misses it; the retransmission is captured)
  #   Na   N% dropped after it (a tc ingress filter, 1 packet in 100/N: both are captured)
  #   rN   N% reordered on the way out (netem: the others wait 1 ms, these go at once)
  #   dN   N% duplicated on the way out (netem: the copy has the same bytes and IPv4 identification)
  # eth0's way out is seen by the capture after its qdisc, eth1's packets reach eth0 after theirs: the
  # capture sees every reordering and copy, both ways.
  local spec=$1 tag="" netem="" t
  for t in $(echo "$spec" | tr ',' ' '); do
    case $t in
      0|"") ;;
      r*) netem="$netem delay 1ms reorder ${t#r}%"; tag="$tag-reorder${t#r}" ;;
      d*) netem="$netem duplicate ${t#d}%"; tag="$tag-dup${t#d}" ;;
      *a)
        local pct=${t%a} n
        for n in 0 1; do
          tc qdisc add dev eth$n ingress
          tc filter add dev eth$n parent ffff: matchall action gact ok random netrand drop $((100 / pct))
        done
        tag="$tag-loss$pct-after" ;;
      *) netem="$netem loss $t%"; tag="$tag-loss$t" ;;
    esac
  done
  if [ -n "$netem" ]; then
    tc qdisc add dev eth0 root netem $netem
    tc qdisc add dev eth1 root netem $netem
  fi
  echo "$tag"
}

TRACE_PID=""
TRACE_EVENTS="-e rpcrdma -e sunrpc -e nfs -e nfs4 -e nfsd -e rdma_cma -e ib_cma"
trace_start() {
  # trace_start FILE.dat: trace-cmd records the RPC-over-RDMA, RPC, NFS client and server and RDMA-CM
  # events (client and server: both are this guest) on the TAI clock, which is the capture's clock
  # (TAI = UTC + the kernel's TAI offset, 0 here). Returns once the events are on.
  mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing
  # shellcheck disable=SC2086
  trace-cmd record -C tai -b 16384 $TRACE_EVENTS -o "$1" > "$1.log" 2>&1 &
  TRACE_PID=$!
  local i=0
  while [ $i -lt 100 ] && [ "$(cat /sys/kernel/tracing/events/rpcrdma/enable 2>/dev/null)" != 1 ]; do
    sleep 0.1; i=$((i + 1))
  done
  sleep 0.5
}

trace_stop() {
  # trace_stop FILE.dat: stop the recorder (it writes FILE.dat) and leave its report beside it, with
  # full-resolution timestamps (`trace-cmd report -t`), and its per-CPU statistics (overruns).
  kill -INT $TRACE_PID 2>/dev/null; wait $TRACE_PID 2>/dev/null
  trace-cmd report -t -i "$1" > "${1%.dat}.txt" 2> "${1%.dat}.report.log"
  trace-cmd report --stat -i "$1" >> "$1.log" 2>&1
}
