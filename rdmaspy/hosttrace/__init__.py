"""Kernel traces read beside a capture: the RPC-over-RDMA, RPC, NFS and RDMA-CM tracepoints of Linux.

A reader, at the rank of ``rdmaspy.readers``: ``source`` opens a trace (``trace-cmd report`` text, with
``-R`` raw fields or ``-t`` full timestamps, plain ftrace text, compressed with xz or gzip, or a
``trace.dat`` read through ``trace-cmd report``) and yields its lines one at a time; ``parse`` turns a
line into a ``HostEvent`` by the declarations of ``events`` (event name -> the fields it carries ->
what they mean); ``resolve`` names the RPC XID each event belongs to from what the trace itself says
(a task's XID, a thread's request, a completion's context).  Joining the events to the wire is the
analysis' (``rdmaspy.analysis.hostjoin``).
"""
