# NVMe over Fabrics on RDMA: a kernel target (nvmet-rdma, configured through configfs: Debian has no
# nvmetcli) on eth1 (192.0.2.2) with one file-backed namespace, the kernel host (nvme-rdma, nvme-cli) on
# eth0 (192.0.2.1), over rxe or siw; one pcap, and beside it a log of what the scenario did.
# Arguments: KIND (rxe or siw; default rxe), LOSS (how the path is impaired, default 0: lab_impair in
# lib.sh, as the nfs scenario does; N dropped before the capture point, Na after it, rN reordered, dN
# duplicated, comma-separated).
#
# The log (nvme-KIND[TAG].ops, TAG from lab_impair: -lossN, -lossN-after, -reorderN, -dupN) has one
# line per step: "op=NAME ... rc=N", with the block sizes, counts and bytes of every dd, so that a test
# can hold the analysis to what was done.
. /lab/share/guest/lib.sh
OUT=/lab/share/out
kind=${1:-rxe}
loss=${2:-0}
NQN=nqn.2026-11.io.rdmaspy:lab
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:2f0e6b1c-7d3a-4c59-9a51-6c2d3b4e5f60
HOSTID=2f0e6b1c-7d3a-4c59-9a51-6c2d3b4e5f60
PORT=4420
lab_rdma_links $kind > $OUT/links.log 2>&1
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
modprobe nvmet-rdma && modprobe nvme-rdma || { echo "lab: nvmet-rdma/nvme-rdma modules missing"; exit 1; }

# The target: one subsystem, any host, namespace 1 backed by a 32 MiB file on the ext4 root (O_DIRECT works
# there; tmpfs would need buffered_io), one RDMA port on B.
T=/sys/kernel/config/nvmet
truncate -s 32M /var/tmp/nvme-ns1.img
mkdir $T/subsystems/$NQN
echo 1 > $T/subsystems/$NQN/attr_allow_any_host
mkdir $T/subsystems/$NQN/namespaces/1
echo /var/tmp/nvme-ns1.img > $T/subsystems/$NQN/namespaces/1/device_path
echo 1 > $T/subsystems/$NQN/namespaces/1/enable || { echo "lab: namespace enable failed"; exit 1; }
mkdir $T/ports/1
echo rdma > $T/ports/1/addr_trtype
echo ipv4 > $T/ports/1/addr_adrfam
echo $B > $T/ports/1/addr_traddr
echo $PORT > $T/ports/1/addr_trsvcid
ln -s $T/subsystems/$NQN $T/ports/1/subsystems/$NQN
cat $T/ports/1/param_inline_data_size 2>/dev/null | sed 's/^/lab: target inline data size /'

tag=$(lab_impair "$loss")
tc qdisc show > $OUT/qdisc.log 2>&1
pcap=$OUT/nvme-$kind$tag.pcap
ops=$OUT/nvme-$kind$tag.ops
: > $ops

# step NAME CMD...: run a command, log its name, arguments and exit status (its output to the step log).
step() {
  name=$1; shift
  "$@" >> $OUT/steps.log 2>&1
  rc=$?
  echo "op=$name cmd=\"$*\" rc=$rc" >> $ops
  return 0
}
# io NAME DIRECTION BS COUNT SKIP: one direct dd of COUNT blocks of BS bytes at block SKIP of the namespace.
io() {
  name=$1 dir=$2 bs=$3 count=$4 at=$5
  if [ $dir = write ]; then
    dd if=/var/tmp/pattern of=$DEV bs=$bs count=$count seek=$at oflag=direct conv=notrunc >> $OUT/steps.log 2>&1
  else
    dd if=$DEV of=/dev/null bs=$bs count=$count skip=$at iflag=direct >> $OUT/steps.log 2>&1
  fi
  rc=$?
  echo "op=$name dir=$dir bs=$bs count=$count offset=$((bs * at)) bytes=$((bs * count)) rc=$rc" >> $ops
}

# Data the writes carry: a text pattern (recognisable in a hex dump, and compressible).
awk 'BEGIN { for (i = 0; i < 16384; i++) printf "rdmaspy nvme lab block %08d ...............................\n", i }' \
  > /var/tmp/pattern
head -c 4096 /var/tmp/pattern > /var/tmp/compare.bin

cap_start $pcap
# tcpdump under TCG may take more than cap_start's second to open the socket: wait until it says it listens.
i=0; while [ $i -lt 100 ] && ! grep -q "listening on" $pcap.log; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
fail=0
step discover nvme discover -t rdma -a $B -s $PORT -w $A -q $HOSTNQN -I $HOSTID
step connect nvme connect -t rdma -a $B -s $PORT -w $A -n $NQN -q $HOSTNQN -I $HOSTID
DEV=""
i=0
while [ $i -lt 100 ]; do
  for d in /dev/nvme*n1; do [ -b "$d" ] && DEV=$d; done
  [ -n "$DEV" ] && break
  sleep 0.2; i=$((i + 1))
done
if [ -z "$DEV" ]; then
  echo "lab: nvme connect over $kind gave no namespace"; fail=1
else
  CTRL=${DEV%n1}
  echo "lab: connected $CTRL ($DEV) over $kind"
  echo "op=device ctrl=$CTRL ns=$DEV" >> $ops
  # Admin commands
  step id-ctrl nvme id-ctrl $CTRL
  step id-ns nvme id-ns $DEV
  step list-ns nvme list-ns $CTRL
  step ns-descs nvme ns-descs $DEV
  step smart-log nvme smart-log $CTRL
  step error-log nvme error-log $CTRL -e 4
  step fw-log nvme fw-log $CTRL
  step get-log-smart nvme get-log $CTRL --log-id=2 --log-len=512
  step get-feature-num-queues nvme get-feature $CTRL -f 7
  step get-feature-kato nvme get-feature $CTRL -f 0x0f
  step set-feature-async-event nvme set-feature $CTRL -f 0x0b -v 0x900
  step get-feature-unsupported nvme get-feature $CTRL -f 0x80
  step get-property-cap nvme get-property $CTRL --offset=0x0
  step get-property-csts nvme get-property $CTRL --offset=0x1c
  # NVM commands without a data transfer, and one the target refuses (Compare)
  step flush nvme flush $DEV -n 1
  step write-zeroes nvme write-zeroes $DEV -n 1 --start-block=64 --block-count=7
  step dsm-deallocate nvme dsm $DEV -n 1 --ad --slbs=128 --blocks=8
  step compare nvme compare $DEV --start-block=0 --block-count=0 --data-size=4096 --data=/var/tmp/compare.bin
  # Idle past half the keep-alive timeout (5 s by default): the host sends a Keep Alive
  sleep 4
  echo "op=idle seconds=4" >> $ops
  # Direct I/O: 4 KiB (writes in-capsule), 128 KiB and 1 MiB (keyed SGL: the target RDMA READs and WRITEs)
  io write-4k write 4096 4 0
  io read-4k read 4096 4 0
  io write-128k write 131072 2 1
  io read-128k read 131072 2 1
  io write-1m write 1048576 1 1
  io read-1m read 1048576 1 1
  # A short mixed run: 8 KiB and 64 KiB writes and reads at scattered blocks
  for n in 3 11 7 29; do
    io mixed-write-8k write 8192 1 $n
    io mixed-read-64k read 65536 1 $((n / 8))
  done
  step disconnect nvme disconnect -n $NQN
fi
sleep 1
cap_stop $pcap > $pcap.cap.log
echo "lab: nvme over $kind$tag: $(tail -1 $pcap.cap.log)"
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^rc=/ && $i != "rc=0") bad++ } END { print "lab: steps with a non-zero status: " bad + 0 }' $ops
exit $fail
