# Kernel NFS over RDMA, every kind of operation: per version, one pcap, the kernel's trace of the
# same run (trace-cmd: rpcrdma, sunrpc, nfs, nfs4, nfsd, rdma_cma, ib_cma) and a JSON log of what the
# workload did (lab/guest/nfs_workload.py: files, offsets, sizes, the RPC operations each step puts on
# the wire).
# Arguments: KIND (rxe or siw; default rxe), LOSS (as in scenario-nfs.sh, lab_impair in lib.sh: N
# percent dropped before the capture point, Na after it, rN reordered, dN duplicated, comma-separated;
# default 0), then the versions (default 3 4.0 4.1 4.2).
# Results, for each version: KIND-nfsvVV-full[TAG].{pcap,ops.json,trace.dat,trace.txt}, TAG from
# lab_impair (-lossN, -lossN-after, -reorderN, -dupN).
. /lab/share/guest/lib.sh
OUT=/lab/share/out
kind=${1:-rxe}
loss=${2:-0}
[ $# -gt 2 ] && shift 2 || set --
versions=${*:-3 4.0 4.1 4.2}
lab_rdma_links $kind > $OUT/links.log 2>&1

# The exports: /export (the root's ext4: long symlinks, POSIX ACLs) and, seen from it (nohide), an XFS
# under /export/xfs (shared blocks for CLONE, extended attributes larger than a block). The XFS image
# lives on the root disk (snapshot=on: nothing stays), not in the guest's memory.
modprobe loop; modprobe xfs
truncate -s 320M /var/tmp/xfs.img
mkfs.xfs -q /var/tmp/xfs.img
mkdir -p /export/xfs && mount -o loop /var/tmp/xfs.img /export/xfs
cat > /etc/exports <<EOF
/export 192.0.2.0/24(rw,no_root_squash,insecure,fsid=0,no_subtree_check)
/export/xfs 192.0.2.0/24(rw,no_root_squash,insecure,fsid=1,no_subtree_check,nohide)
EOF
# A delegation recall that the client does not answer would hold the conflicting open this long.
echo 5 > /proc/sys/fs/lease-break-time
# The event systems of modules not yet loaded would be missing from the trace.
modprobe nfs; modprobe nfsv3; modprobe nfsv4
nfs_server_start
rpc.statd --no-notify       # NLM's status monitor (v3 locks), for the client and the server
tag=$(lab_impair "$loss")
tc qdisc show > $OUT/qdisc.log 2>&1
fail=0
for v in $versions; do
  name=$kind-nfsv$(echo $v | tr -d .)-full$tag
  trace_start /tmp/$name.trace.dat
  cap_start $OUT/$name.pcap
  python3 /lab/share/guest/nfs_workload.py --version $v --server $B --client $A --export /export \
    --log $OUT/$name.ops.json > $OUT/$name.workload.log 2>&1 || { echo "lab: nfs-full v$v failed"; fail=1; }
  cap_stop $OUT/$name.pcap > $OUT/$name.pcap.cap.log
  trace_stop /tmp/$name.trace.dat
  mv /tmp/$name.trace.* $OUT/
  # The log says how it was made and whether the capture is whole (tcpdump's captured == received).
  python3 - "$OUT/$name.ops.json" "$OUT/$name.pcap.cap.log" "$kind" "$loss" <<'PY'
import json, re, sys
path, caplog, kind, loss = sys.argv[1:]
log = json.load(open(path))
text = open(caplog).read()
count = lambda what: int(re.findall(r"(\d+) packets? " + what, text)[-1])
log["transport"], log["loss"] = kind, loss
log["capture"] = {"captured": count("captured"), "received": count("received by filter"),
                  "dropped": count("dropped by kernel")}
open(path, "w").write(json.dumps(log, indent=1) + "\n")
PY
  failed=$(grep -c '"ok": false' $OUT/$name.ops.json)
  echo "lab: nfs-full v$v over $kind$tag: $(tail -1 $OUT/$name.pcap.cap.log | tr -d '\n'), $failed steps failed, trace $(wc -c < $OUT/$name.trace.dat) bytes"
done
exit $fail
