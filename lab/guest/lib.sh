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
