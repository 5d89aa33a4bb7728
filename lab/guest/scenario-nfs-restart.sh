# Kernel NFS over RDMA with the connection broken under a client's writes, one pcap and the kernel's
# trace of the same run (docs/hosttrace.md: host.reconnect, host.retransmission, host.completion_error).
# MODE restart: the server is stopped and started again: the client sees its connection closed (CM
# DREQ), reconnects once the server listens again (a new QP each try) and goes on.  MODE blackout: the
# server's NIC drops everything for BLACKOUT seconds (20): its Sends are retried until its QP gives up, the
# connection breaks, and the client, once the link is back, reconnects and sends again the calls left
# unanswered (xprt_retransmit).
# Arguments: KIND (rxe or siw; default rxe), VERSION (default 3), MODE (restart or blackout; default restart),
# BLACKOUT (seconds, default 20).
# Results: KIND-nfsvV-MODE.{pcap,trace.dat,trace.txt,log,writes.log}.
. /lab/share/guest/lib.sh
OUT=/lab/share/out
kind=${1:-rxe}
v=${2:-3}
mode=${3:-restart}
blackout=${4:-20}       # seconds the server's NIC drops everything: past the RC retries of its Sends
lab_rdma_links $kind > $OUT/links.log 2>&1
# The event systems of modules not yet loaded would be missing from the trace (trace-cmd refuses them).
modprobe nfs; modprobe nfsv3; modprobe nfsv4
nfs_server_start
name=$kind-nfsv$(echo $v | tr -d .)-$mode
case $v in 3) path=/export ;; *) path=/ ;; esac
trace_start /tmp/$name.trace.dat
cap_start $OUT/$name.pcap
fail=0
if mount -t nfs -o proto=rdma,port=20049,vers=$v,clientaddr=$A $B:$path /mnt/nfs; then
  dd if=/dev/urandom of=/mnt/nfs/before bs=4k count=4 oflag=direct 2>/dev/null
  # Small direct writes (inline: 512 bytes), one after the other, while the connection breaks: one is in
  # flight when it does.
  rm -f /tmp/stop-writes
  ( i=0; while [ ! -e /tmp/stop-writes ]; do dd if=/dev/urandom of=/mnt/nfs/during bs=512 count=1 seek=$i \
      oflag=direct conv=notrunc 2>/dev/null; i=$((i + 1)); done; echo "lab: $i writes done" ) \
      > $OUT/$name.writes.log 2>&1 &
  writer=$!
  sleep 2
  case $mode in
    blackout)
      echo "lab: server's NIC drops all $(date +%s.%N)" >> $OUT/$name.log
      tc qdisc add dev eth1 root netem loss 100%
      sleep $blackout
      tc qdisc del dev eth1 root
      echo "lab: server's NIC back $(date +%s.%N)" >> $OUT/$name.log ;;
    *)
      echo "lab: server stops $(date +%s.%N)" >> $OUT/$name.log
      rpc.nfsd 0
      sleep 3
      echo "lab: server starts $(date +%s.%N)" >> $OUT/$name.log
      rpc.nfsd 4
      echo rdma 20049 > /proc/fs/nfsd/portlist ;;
  esac
  sleep 4
  touch /tmp/stop-writes
  wait $writer
  md5sum /mnt/nfs/before /mnt/nfs/during >> $OUT/$name.log
  umount /mnt/nfs
else
  echo "lab: NFS v$v mount over $kind failed"; fail=1
fi
cap_stop $OUT/$name.pcap > $OUT/$name.pcap.cap.log
trace_stop /tmp/$name.trace.dat
mv /tmp/$name.trace.* $OUT/
echo "lab: nfs-restart $mode v$v over $kind: $(tail -1 $OUT/$name.pcap.cap.log | tr -d '\n'), trace $(wc -c < $OUT/$name.trace.dat) bytes"
exit $fail
