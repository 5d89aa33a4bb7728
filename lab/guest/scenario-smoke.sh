# Smoke: both RDMA kinds come up and one ibv_rc_pingpong crosses the wire.
. /lab/share/guest/lib.sh
OUT=/lab/share/out
set -x
for kind in rxe siw; do
  lab_rdma_links $kind
  ibv_devices
  cap_start $OUT/smoke-$kind.pcap
  if [ $kind = rxe ]; then g="-g 1"; else g=""; fi
  ibv_rc_pingpong -d ${kind}1 $g -n 5 > $OUT/pp-srv-$kind.log 2>&1 & srv=$!
  sleep 1
  ibv_rc_pingpong -d ${kind}0 $g -n 5 $B > $OUT/pp-cli-$kind.log 2>&1
  wait $srv
  cap_stop $OUT/smoke-$kind.pcap
done
