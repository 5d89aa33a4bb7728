# The benchmark of the traffic generator, all on the same rxe pair in one boot.
#  1. User-space instructions per operation (callgrind), one side at a time under valgrind while
#     its peer runs at full speed, so that neither waits long for a slowed-down peer:
#     rdmaspy's loops (native hot path, pure pyverbs, and a whole RPC call with a Write chunk)
#     switch callgrind's instrumentation on around the loop (--instr-atstart=no), which leaves
#     start-up out; perftest is counted whole at N and 2N operations and differenced, and so is
#     the RPC call (serve's count includes the client's set-up and disconnect).
#  2. System calls per operation: strace -c -f of both sides at N and 2N, differenced.
#  3. Wall-clock rates (meaningless under TCG, kept for the record; see docs/generator.md).
# Usage: lab/run bench [N]   (default N=300; lab/bench_report.py prints the table)
. /lab/share/guest/lib.sh
OUT=/lab/share/out
N=${1:-300}
mkdir -p $OUT/cg $OUT/st
lab_rdma_links rxe > $OUT/links.log 2>&1
GUARD=30

pair() {
  # pair NAME "SERVER CMD" "CLIENT CMD"
  sh -c "$2" > $OUT/$1.server.log 2>&1 & local srv=$!
  case "$2" in *rdmaspy*) wait_listening $OUT/$1.server.log ;; *) sleep 3 ;; esac
  local i=0
  # perftest's client gives up when its server is not listening yet: try again.
  until sh -c "$3" > $OUT/$1.client.log 2>&1 < /dev/null; do
    i=$((i + 1)); [ $i -ge 10 ] && { echo "lab: $1 client failed"; break; }; sleep 3
  done
  ( sleep $GUARD; kill $srv 2>/dev/null ) & local guard=$!
  wait $srv; kill $guard 2>/dev/null
  echo "lab: $1: $(tail -2 $OUT/$1.client.log | tr '\n' ' ')"
}

# Each benchmark: NAME, then its server and client commands with @N@ for the operation count.
RS="rdmaspy serve --addr $B --bench-size 64"
RL="rdmaspy load --src $A --dst $B --bench-size 64"
BENCHES="native-send|$RS --bench native --iterations @N@|$RL --bench native --iterations @N@
pyverbs-send|$RS --bench pyverbs --iterations @N@|$RL --bench pyverbs --iterations @N@
perftest-send|ib_send_lat -d rxe1 -x 1 -s 64 -n @N@|ib_send_lat -d rxe0 -x 1 -s 64 -n @N@ $B
native-read|$RS --bench native --bench-op read --iterations @N@|$RL --bench native --bench-op read --iterations @N@
pyverbs-read|$RS --bench pyverbs --bench-op read --iterations @N@|$RL --bench pyverbs --bench-op read --iterations @N@
perftest-read|ib_read_lat -d rxe1 -x 1 -s 64 -n @N@|ib_read_lat -d rxe0 -x 1 -s 64 -n @N@ $B
native-write|$RS --bench native --bench-op write --bench-depth 16 --iterations @N@|$RL --bench native --bench-op write --bench-depth 16 --iterations @N@
pyverbs-write|$RS --bench pyverbs --bench-op write --bench-depth 16 --iterations @N@|$RL --bench pyverbs --bench-op write --bench-depth 16 --iterations @N@
perftest-write|ib_write_bw -d rxe1 -x 1 -s 64 -t 16 -n @N@|ib_write_bw -d rxe0 -x 1 -s 64 -t 16 -n @N@ $B
native-rpc-write-chunk|rdmaspy serve --addr $B|rdmaspy load --src $A --dst $B --quiet --mix read --size 4096 --count @N@ --concurrency 1"

at() { echo "$1" | sed "s/@N@/$2/g"; }

echo "$BENCHES" | while IFS='|' read -r name srv cli; do
  case $name in
    perftest-*) counts="$N $((2 * N))"; cg="valgrind --tool=callgrind" ;;
    # serve counts from the accept: the client's set-up and disconnect are in it, differenced away
    *-rpc-*) counts="$N $((2 * N))"; cg="valgrind --tool=callgrind --instr-atstart=no" ;;
    *) counts=$N; cg="valgrind --tool=callgrind --instr-atstart=no" ;;
  esac
  GUARD=180
  for n in $counts; do
    pair cg-$name-server-$n "$cg --callgrind-out-file=$OUT/cg/$name.server.$n.out $(at "$srv" $n)" "$(at "$cli" $n)"
    pair cg-$name-client-$n "$(at "$srv" $n)" "$cg --callgrind-out-file=$OUT/cg/$name.client.$n.out $(at "$cli" $n)"
  done
  GUARD=60
  for n in $N $((2 * N)); do
    pair st-$name-$n "strace -c -f -o $OUT/st/$name.server.$n.txt $(at "$srv" $n)" \
      "strace -c -f -o $OUT/st/$name.client.$n.txt $(at "$cli" $n)"
  done
done

GUARD=30
W=$((4 * N))
for mode in native pyverbs native-cm; do
  pair bench-$mode "rdmaspy serve --addr $B --bench $mode --iterations $W" \
    "rdmaspy load --src $A --dst $B --bench $mode --iterations $W --json $OUT/bench-$mode.json"
done
pair perftest-send-lat "ib_send_lat -d rxe1 -x 1 -s 64 -n $W" "ib_send_lat -d rxe0 -x 1 -s 64 -n $W $B"
pair perftest-write-bw "ib_write_bw -d rxe1 -x 1 -s 65536 -n $W" "ib_write_bw -d rxe0 -x 1 -s 65536 -n $W $B"
pair rpc-null-c1 "rdmaspy serve --addr $B" \
  "rdmaspy load --src $A --dst $B --quiet --mix null --count $W --concurrency 1 --json $OUT/rpc-null-c1.json"
pair rpc-null-c16 "rdmaspy serve --addr $B" \
  "rdmaspy load --src $A --dst $B --quiet --mix null --count $W --concurrency 16 --json $OUT/rpc-null-c16.json"
