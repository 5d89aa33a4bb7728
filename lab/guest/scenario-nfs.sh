# Kernel NFS over RDMA (proto=rdma, port 20049): mount, write, read, list, unmount for
# NFS v3, 4.0, 4.1 and 4.2 over rxe or siw, one pcap per version.
# Arguments: KIND (rxe or siw; default rxe), LOSS (how the path is impaired, default 0: lab_impair in
# lib.sh; N: N% dropped before the capture point, Na after it, rN reordered, dN duplicated, comma-separated),
# then the versions (default 3 4.0 4.1 4.2).
. /lab/share/guest/lib.sh
OUT=/lab/share/out
kind=${1:-rxe}
loss=${2:-0}
[ $# -gt 2 ] && shift 2 || set --
versions=${*:-3 4.0 4.1 4.2}
lab_rdma_links $kind > $OUT/links.log 2>&1
nfs_server_start
tag=$(lab_impair "$loss")
tc qdisc show > $OUT/qdisc.log 2>&1
fail=0
for v in $versions; do
  pcap=$OUT/nfs-$kind-v$v$tag.pcap
  cap_start $pcap
  # /export is exported with fsid=0: NFSv4's pseudo-root, so v4 mounts name it "/".
  case $v in 3) path=/export ;; *) path=/ ;; esac
  if mount -t nfs -o proto=rdma,port=20049,vers=$v,clientaddr=$A $B:$path /mnt/nfs; then
    # On an impaired path a transport can stall for good (rxe): the mount is let go after 300 s.
    ( sleep 300; echo "lab: NFS v$v over $kind$tag stalled: forced unmount"; umount -f -l /mnt/nfs ) &
    watchdog=$!
    dd if=/dev/urandom of=/mnt/nfs/file-$v bs=64k count=4 2>/dev/null
    sync; echo 3 > /proc/sys/vm/drop_caches
    md5sum /mnt/nfs/file-$v > /dev/null
    ls -la /mnt/nfs > /dev/null
    umount /mnt/nfs
    kill $watchdog 2>/dev/null
  else
    echo "lab: NFS v$v mount over $kind failed"; fail=1
  fi
  cap_stop $pcap > $pcap.cap.log
  echo "lab: nfs v$v over $kind$tag: $(tail -1 $pcap.cap.log)"
done
exit $fail
