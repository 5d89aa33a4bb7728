# Kernel NFS over RDMA (proto=rdma, port 20049): mount, write, read, list, unmount for
# NFS v3, 4.0, 4.1 and 4.2 over rxe or siw, one pcap per version.
# Arguments: KIND (rxe or siw; default rxe), LOSS (percent of the packets each NIC drops, default 0:
# N drops them before the capture point, Na after it), then the versions (default 3 4.0 4.1 4.2).
. /lab/share/guest/lib.sh
OUT=/lab/share/out
kind=${1:-rxe}
loss=${2:-0}
[ $# -gt 2 ] && shift 2 || set --
versions=${*:-3 4.0 4.1 4.2}
lab_rdma_links $kind > $OUT/links.log 2>&1
modprobe rpcrdma 2>/dev/null || { modprobe svcrdma; modprobe xprtrdma; }
mkdir -p /proc/fs/nfsd /var/lib/nfs/rpc_pipefs /run/rpcbind /mnt/nfs
mount -t nfsd nfsd /proc/fs/nfsd
mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs 2>/dev/null
rpcbind -w
exportfs -ra
rpc.mountd
# No nfsdcld here: short grace and lease times, or the first open waits 90 s.
echo 10 > /proc/fs/nfsd/nfsv4gracetime
echo 10 > /proc/fs/nfsd/nfsv4leasetime
rpc.nfsd 4
echo rdma 20049 > /proc/fs/nfsd/portlist
cat /proc/fs/nfsd/portlist
sleep 11          # let the grace period pass
tag=""
case $loss in
  0) ;;
  *a)
    # After the capture point: each NIC drops on its way in (a tc ingress filter, 1 packet in 100/N),
    # after tcpdump on eth0 has seen the packet: a lost packet and its retransmission are both captured.
    pct=${loss%a}
    for n in 0 1; do
      tc qdisc add dev eth$n ingress
      tc filter add dev eth$n parent ffff: matchall action gact ok random netrand drop $((100 / pct))
    done
    tag=-loss$pct-after ;;
  *)
    # Before the capture point: both NICs drop on their way out (eth0's egress is seen after its qdisc,
    # eth1's packets never reach eth0); the retransmissions are captured.
    tc qdisc add dev eth0 root netem loss $loss%
    tc qdisc add dev eth1 root netem loss $loss%
    tag=-loss$loss ;;
esac
fail=0
for v in $versions; do
  pcap=$OUT/nfs-$kind-v$v$tag.pcap
  cap_start $pcap
  # /export is exported with fsid=0: NFSv4's pseudo-root, so v4 mounts name it "/".
  case $v in 3) path=/export ;; *) path=/ ;; esac
  if mount -t nfs -o proto=rdma,port=20049,vers=$v,clientaddr=$A $B:$path /mnt/nfs; then
    dd if=/dev/urandom of=/mnt/nfs/file-$v bs=64k count=4 2>/dev/null
    sync; echo 3 > /proc/sys/vm/drop_caches
    md5sum /mnt/nfs/file-$v > /dev/null
    ls -la /mnt/nfs > /dev/null
    umount /mnt/nfs
  else
    echo "lab: NFS v$v mount over $kind failed"; fail=1
  fi
  cap_stop $pcap > $pcap.cap.log
  echo "lab: nfs v$v over $kind$tag: $(tail -1 $pcap.cap.log)"
done
exit $fail
