# The benchmark of the traffic generator, all on the same rxe pair in one boot:
# the native hot path, the pure-pyverbs loop, perftest's ib_send_lat and ib_write_bw,
# and the RPC NULL call rate of rdmaspy load.
. /lab/share/guest/lib.sh
OUT=/lab/share/out
N=${1:-2000}
lab_rdma_links rxe > $OUT/links.log 2>&1

pair() {
  # pair NAME "SERVER CMD" "CLIENT CMD"
  sh -c "$2" > $OUT/$1.server.log 2>&1 & local srv=$!
  case "$2" in rdmaspy*) wait_listening $OUT/$1.server.log ;; *) sleep 3 ;; esac
  local i=0
  # perftest's client gives up when its server is not listening yet: try again.
  until sh -c "$3" > $OUT/$1.client.log 2>&1; do
    i=$((i + 1)); [ $i -ge 5 ] && { echo "lab: $1 client failed"; break; }; sleep 3
  done
  ( sleep 30; kill $srv 2>/dev/null ) & local guard=$!
  wait $srv; kill $guard 2>/dev/null
  echo "lab: $1: $(tail -3 $OUT/$1.client.log | tr '\n' ' ')"
}

for mode in native pyverbs native-cm; do
  pair bench-$mode "rdmaspy serve --addr $B --bench $mode --iterations $N" \
    "rdmaspy load --src $A --dst $B --bench $mode --iterations $N --json $OUT/bench-$mode.json"
done
pair perftest-send-lat "ib_send_lat -d rxe1 -x 1 -s 64 -n $N" "ib_send_lat -d rxe0 -x 1 -s 64 -n $N $B"
pair perftest-write-bw "ib_write_bw -d rxe1 -x 1 -s 65536 -n $N" "ib_write_bw -d rxe0 -x 1 -s 65536 -n $N $B"
pair rpc-null-c1 "rdmaspy serve --addr $B" \
  "rdmaspy load --src $A --dst $B --quiet --mix null --count $N --concurrency 1 --json $OUT/rpc-null-c1.json"
pair rpc-null-c16 "rdmaspy serve --addr $B" \
  "rdmaspy load --src $A --dst $B --quiet --mix null --count $N --concurrency 16 --json $OUT/rpc-null-c16.json"
