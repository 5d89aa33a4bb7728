# perftest over one RDMA pair on an impaired path: ib_read_bw, ib_write_bw, ib_send_bw, one pcap each.
# Arguments: KIND (rxe or siw; default rxe), LOSS (how the path is impaired: lab_impair in lib.sh, e.g.
# 1a,r3,d0.5), then the tests (default: read write send).  Each moves 100 messages of 4 KiB (four packets
# at rxe's 1024-byte MTU); siw connects through RDMA-CM (-R).
. /lab/share/guest/lib.sh
OUT=/lab/share/out
kind=${1:-rxe}
loss=${2:-0}
[ $# -gt 2 ] && shift 2 || set --
tests=${*:-read write send}
lab_rdma_links $kind > $OUT/links.log 2>&1
tag=$(lab_impair "$loss")
tc qdisc show > $OUT/qdisc.log 2>&1
case $kind in siw) how="-R" ;; *) how="-x 1" ;; esac
fail=0
for t in $tests; do
  pcap=$OUT/perftest-$kind-$t$tag.pcap
  cap_start $pcap
  # a QP that runs out of retries ends the run with an error: the timeouts end a hang anywhere else
  timeout 180 ib_${t}_bw -d ${kind}1 $how -s 4096 -n 100 > $OUT/perftest-$t.server.log 2>&1 &
  srv=$!
  sleep 3
  timeout 180 ib_${t}_bw -d ${kind}0 $how -s 4096 -n 100 $B > $OUT/perftest-$t.client.log 2>&1 \
    || { echo "lab: perftest $t over $kind$tag: the client failed"; tail -3 $OUT/perftest-$t.client.log; fail=1; }
  wait $srv
  cap_stop $pcap > $pcap.cap.log
  echo "lab: perftest $t over $kind$tag: $(tail -1 $pcap.cap.log)"
done
exit $fail
