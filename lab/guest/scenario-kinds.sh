# Kinds of traffic the shipped captures lack, one small pcap each (the per-kind table of
# benchmarks/decode_bench.py --kinds): UD with SIDR (udaddy), rping, atomics (ib_atomic_bw), an
# RPC-over-RDMA v2 session (rdmaspy serve/load), all over rxe; NFSv4.1 over rxe with a delegation
# recalled over the backchannel, then NFSv4.1 over rxe with 2 % of every NIC's packets lost.
# Arguments: the steps to run (default: all of them, in this order).
. /lab/share/guest/lib.sh
OUT=/lab/share/out
steps=${*:-udaddy rping atomic v2 nfs-recall nfs-loss}
lab_rdma_links rxe > $OUT/links.log 2>&1
fail=0

client_server() {
  # client_server NAME "SERVER COMMAND" "CLIENT COMMAND": the server in the background, the client
  # after it (at most 120 s), the capture around both.
  local name=$1
  cap_start $OUT/$name.pcap
  sh -c "$2" > $OUT/$name.server.log 2>&1 & local srv=$!
  sleep 2
  timeout 120 sh -c "$3" > $OUT/$name.client.log 2>&1 || { echo "lab: $name: client failed"; tail -5 $OUT/$name.client.log; fail=1; }
  ( sleep 20; kill $srv 2>/dev/null ) & local guard=$!
  wait $srv || { echo "lab: $name: server failed"; tail -5 $OUT/$name.server.log; fail=1; }
  kill $guard 2>/dev/null
  cap_stop $OUT/$name.pcap > $OUT/$name.cap.log
  echo "lab: $name: $(tail -1 $OUT/$name.cap.log)"
}

nfs_server() {
  modprobe rpcrdma 2>/dev/null || { modprobe svcrdma; modprobe xprtrdma; }
  mkdir -p /proc/fs/nfsd /var/lib/nfs/rpc_pipefs /run/rpcbind /mnt/nfs
  mount -t nfsd nfsd /proc/fs/nfsd
  mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs 2>/dev/null
  rpcbind -w
  exportfs -ra
  rpc.mountd
  echo 10 > /proc/fs/nfsd/nfsv4gracetime
  echo 10 > /proc/fs/nfsd/nfsv4leasetime
  # lockd's grace period (50 s by default) holds every delegation back too
  modprobe lockd
  echo 10 > /proc/sys/fs/nfs/nlm_grace_period
  rpc.nfsd 4
  echo rdma 20049 > /proc/fs/nfsd/portlist
  sleep 11          # let the grace period pass
}

nfs_mounted() {
  # nfs_mounted NAME COMMANDS: mount NFSv4.1 over rxe, run COMMANDS, unmount; the capture around it.
  local name=$1
  cap_start $OUT/$name.pcap
  if mount -t nfs -o proto=rdma,port=20049,vers=4.1,clientaddr=$A $B:/ /mnt/nfs; then
    sh -c "$2" > $OUT/$name.log 2>&1 || { echo "lab: $name: commands failed"; tail -5 $OUT/$name.log; fail=1; }
    umount /mnt/nfs
  else
    echo "lab: $name: NFSv4.1 mount over rxe failed"; fail=1
  fi
  cap_stop $OUT/$name.pcap > $OUT/$name.cap.log
  echo "lab: $name: $(tail -1 $OUT/$name.cap.log)"
}

nfs_up=0
for step in $steps; do
  case $step in
    udaddy)
      # UD queue pairs resolved by SIDR (CM SIDR REQ/REP), then datagrams both ways.
      client_server rxe-udaddy "udaddy -b $B -C 10" "udaddy -s $B -b $A -C 10" ;;
    rping)
      client_server rxe-rping "rping -s -a $B -C 10 -S 64" "rping -c -a $B -I $A -C 10 -S 64 -v" ;;
    atomic)
      # Fetch&Add by default; connected by RDMA-CM (-R).
      client_server rxe-ib_atomic_bw "ib_atomic_bw -d rxe1 -R -n 100 -F" "ib_atomic_bw -d rxe0 -R -n 100 -F $B" ;;
    v2)
      # rdmaspy's own RPC-over-RDMA v2 session, as lab/run test runs it (fewer calls).
      cap_start $OUT/rxe-rpcrdma2-session.pcap
      rdmaspy serve --addr $B --version 2 > $OUT/v2.serve.log 2>&1 & srv=$!
      wait_listening $OUT/v2.serve.log
      timeout 180 rdmaspy load --src $A --dst $B --quiet --version 2 --mix null,echo,read,write,bigreply,pullreply \
        --count 24 --concurrency 4 > $OUT/v2.load.log 2>&1 || { echo "lab: v2: load failed"; tail -5 $OUT/v2.load.log; fail=1; }
      ( sleep 20; kill $srv 2>/dev/null ) & guard=$!
      wait $srv || { echo "lab: v2: serve failed"; fail=1; }
      kill $guard 2>/dev/null
      cap_stop $OUT/rxe-rpcrdma2-session.pcap > $OUT/v2.cap.log
      echo "lab: v2: $(tail -1 $OUT/v2.cap.log)" ;;
    nfs-recall)
      [ $nfs_up = 1 ] || { nfs_server; nfs_up=1; }
      # The client opens a file to read and keeps it open (a read delegation), then a process on the
      # server writes it: nfsd recalls the delegation with CB_RECALL on the 4.1 backchannel.
      echo first > /export/deleg
      nfs_mounted rxe-nfsv41-deleg-recall "exec 3< /mnt/nfs/deleg; cat <&3; sleep 2;
        echo second >> /export/deleg; sleep 1; exec 3<&-; cat /mnt/nfs/deleg; grep DELEGRETURN /proc/self/mountstats"
      ;;
    nfs-loss)
      [ $nfs_up = 1 ] || { nfs_server; nfs_up=1; }
      # 2 % of the packets lost on both NICs' way out, before the capture point (as lab/run nfs rxe 2).
      tc qdisc add dev eth0 root netem loss 2%
      tc qdisc add dev eth1 root netem loss 2%
      nfs_mounted rxe-nfsv41-loss "dd if=/dev/urandom of=/mnt/nfs/file bs=64k count=4 2>/dev/null; sync;
        echo 3 > /proc/sys/vm/drop_caches; md5sum /mnt/nfs/file; ls -la /mnt/nfs"
      tc qdisc del dev eth0 root; tc qdisc del dev eth1 root ;;
    *) echo "lab: no step '$step'"; fail=1 ;;
  esac
done
exit $fail
