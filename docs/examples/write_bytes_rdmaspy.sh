#!/bin/sh
# RDMA WRITE payload bytes per destination QP of a capture: rdmaspy's display filter and field output.
rdmaspy decode "$1" -Y 'bth.opcode in {0x06..0x0b 0x26..0x2b 0x46..0x4b 0xa6..0xab}' \
        -T fields -e bth.destqp -e ib.payload_len |
    awk '{ n[$1] += $2 } END { for (qp in n) printf "QP %s %d bytes\n", qp, n[qp] }' | sort
