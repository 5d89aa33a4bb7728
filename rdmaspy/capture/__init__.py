"""Live capture: AF_PACKET with a TPACKET_V3 ring, kernel BPF filters compiled by libpcap, RDMA device to
netdev resolution through sysfs, and the loop that writes pcapng files and feeds the live display.

- ``devices``: ``resolve(name, sysfs)``, ``rdma_devices(sysfs)``, ``listing(sysfs)`` (``capture -D``)
- ``bpf``: ``compile_bpf(expr, linktype, snaplen)``, ``kernel_program(expr, cooked, snaplen)``, ``attach``
- ``ring``: ``Ring`` (the socket and its mmap'd ring, ``stats()`` from PACKET_STATISTICS)
- ``live``: ``LiveCapture`` (the loop), ``FileSet`` (-w, ring buffer of files), ``Limits``, ``RingBuffer``
"""
