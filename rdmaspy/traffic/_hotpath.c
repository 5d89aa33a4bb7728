/*
 * rdmaspy.traffic._hotpath: the generator's hot path against libibverbs.
 *
 * pyverbs runs the control path (RDMA-CM, PD, MR, QP); this module posts Sends,
 * Receives, RDMA Reads and Writes on the QP of a connected rdma_cm_id and polls its
 * completion queues, without a Python object per work request.  It also reads the
 * private data of the CM event an rdma_cm_id holds (REQ on the passive side, REP on
 * the active side), which pyverbs 44 does not expose.
 *
 * pyverbs 44 does not hand out the rdma_cm_id pointer either; Endpoint finds it in
 * the CMID object and accepts it only when the QP behind it carries the expected QP
 * number, so a layout change in pyverbs fails cleanly rather than corrupting memory.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
/* Under callgrind (valgrind's headers present at build time), the benchmark counts the
 * instructions of its loop alone: instrumentation is switched on around it. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#endif
#endif

typedef struct {
    PyObject_HEAD
    struct rdma_cm_id *id;
    struct ibv_qp *qp;
    struct ibv_cq *scq, *rcq;
    PyObject *owner;          /* the pyverbs CMID: keeps the QP alive */
} Endpoint;

static PyObject *HotpathError;
/* One CPU: a poller waiting for its peer yields to it between polls; with more, yielding
 * would only add a system call per empty poll. */
static int share_cpu;

static int plausible(const void *p)
{
    uintptr_t v = (uintptr_t)p;
    return v >= 0x10000 && (v & 7) == 0 && v < ((uintptr_t)1 << 47);
}

static struct rdma_cm_id *find_cm_id(PyObject *cmid, uint32_t qpn)
{
    Py_ssize_t size = Py_TYPE(cmid)->tp_basicsize;
    char *base = (char *)cmid;
    for (Py_ssize_t off = sizeof(PyObject); off + (Py_ssize_t)sizeof(void *) <= size; off += sizeof(void *)) {
        struct rdma_cm_id *id = *(struct rdma_cm_id **)(base + off);
        if (!plausible(id) || !plausible(id->qp) || !plausible(id->verbs))
            continue;
        if (id->qp->qp_num == qpn && id->qp->context == id->verbs)
            return id;
    }
    return NULL;
}

static struct ibv_qp *find_qp(PyObject *obj, uint32_t qpn)
{
    Py_ssize_t size = Py_TYPE(obj)->tp_basicsize;
    char *base = (char *)obj;
    for (Py_ssize_t off = sizeof(PyObject); off + (Py_ssize_t)sizeof(void *) <= size; off += sizeof(void *)) {
        struct ibv_qp *qp = *(struct ibv_qp **)(base + off);
        if (!plausible(qp) || !plausible(qp->context) || !plausible(qp->send_cq) || !plausible(qp->recv_cq))
            continue;
        if (qp->qp_num == qpn && qp->send_cq->context == qp->context)
            return qp;
    }
    return NULL;
}

static int Endpoint_init(Endpoint *self, PyObject *args, PyObject *Py_UNUSED(kw))
{
    PyObject *obj;
    unsigned int qpn;
    if (!PyArg_ParseTuple(args, "OI", &obj, &qpn))
        return -1;
    /* A pyverbs CMID (its rdma_cm_id) or a pyverbs QP (its ibv_qp). */
    struct rdma_cm_id *id = find_cm_id(obj, qpn);
    if (id) {
        self->id = id;
        self->qp = id->qp;
        self->scq = id->send_cq ? id->send_cq : id->qp->send_cq;
        self->rcq = id->recv_cq ? id->recv_cq : id->qp->recv_cq;
    } else {
        struct ibv_qp *qp = find_qp(obj, qpn);
        if (!qp) {
            PyErr_Format(HotpathError, "no rdma_cm_id or ibv_qp with QP number %u in this object", qpn);
            return -1;
        }
        self->id = NULL;
        self->qp = qp;
        self->scq = qp->send_cq;
        self->rcq = qp->recv_cq;
    }
    PyObject *cmid = obj;
    Py_INCREF(cmid);
    Py_XSETREF(self->owner, cmid);
    return 0;
}

static void Endpoint_dealloc(Endpoint *self)
{
    Py_XDECREF(self->owner);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *rdma_errno(const char *what, int err)
{
    PyErr_Format(HotpathError, "%s: %s", what, strerror(err));
    return NULL;
}

/* post_recv(wr_id, addr, length, lkey) */
static PyObject *Endpoint_post_recv(Endpoint *self, PyObject *args)
{
    unsigned long long wr_id, addr;
    unsigned int length, lkey;
    if (!PyArg_ParseTuple(args, "KKII", &wr_id, &addr, &length, &lkey))
        return NULL;
    struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };
    struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
    int rc = ibv_post_recv(self->qp, &wr, &bad);
    if (rc)
        return rdma_errno("ibv_post_recv", rc);
    Py_RETURN_NONE;
}

enum { OP_SEND = 0, OP_SEND_INV = 1, OP_WRITE = 2, OP_READ = 3 };

/* post(wr_id, op, addr, length, lkey, remote_addr=0, rkey=0, invalidate=0, signaled=1) */
static PyObject *Endpoint_post(Endpoint *self, PyObject *args)
{
    unsigned long long wr_id, addr, raddr = 0;
    unsigned int op, length, lkey, rkey = 0, inv = 0;
    int signaled = 1;
    if (!PyArg_ParseTuple(args, "KIKII|KIIp", &wr_id, &op, &addr, &length, &lkey, &raddr, &rkey, &inv,
                          &signaled))
        return NULL;
    struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };
    struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = length ? 1 : 0 }, *bad;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    switch (op) {
    case OP_SEND: wr.opcode = IBV_WR_SEND; break;
    case OP_SEND_INV: wr.opcode = IBV_WR_SEND_WITH_INV; wr.invalidate_rkey = inv; break;
    case OP_WRITE: wr.opcode = IBV_WR_RDMA_WRITE; break;
    case OP_READ: wr.opcode = IBV_WR_RDMA_READ; break;
    default:
        PyErr_Format(PyExc_ValueError, "operation %u", op);
        return NULL;
    }
    if (op >= OP_WRITE) {
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey = rkey;
    }
    int rc = ibv_post_send(self->qp, &wr, &bad);
    if (rc)
        return rdma_errno("ibv_post_send", rc);
    Py_RETURN_NONE;
}

/* post_sends([(wr_id, addr, length, lkey), ...]): one chain of signaled Sends, one doorbell,
 * so that a burst leaves back to back (the exceed-credits fault relies on it). */
static PyObject *Endpoint_post_sends(Endpoint *self, PyObject *list)
{
    PyObject *seq = PySequence_Fast(list, "post_sends takes a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n <= 0 || n > 256) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "post_sends takes 1 to 256 sends");
        return NULL;
    }
    struct ibv_send_wr wrs[256], *bad;
    struct ibv_sge sges[256];
    memset(wrs, 0, sizeof(wrs[0]) * n);
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned long long wr_id, addr;
        unsigned int length, lkey;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "KKII", &wr_id, &addr, &length, &lkey)) {
            Py_DECREF(seq);
            return NULL;
        }
        sges[i] = (struct ibv_sge){ .addr = addr, .length = length, .lkey = lkey };
        wrs[i].wr_id = wr_id;
        wrs[i].sg_list = &sges[i];
        wrs[i].num_sge = 1;
        wrs[i].opcode = IBV_WR_SEND;
        wrs[i].send_flags = IBV_SEND_SIGNALED;
        wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
    }
    Py_DECREF(seq);
    int rc = ibv_post_send(self->qp, wrs, &bad);
    if (rc)
        return rdma_errno("ibv_post_send", rc);
    Py_RETURN_NONE;
}

static PyObject *poll_cq(struct ibv_cq *cq, int max, int spin_ms)
{
    struct ibv_wc wc[32];
    if (max > 32)
        max = 32;
    if (max < 1)
        max = 1;
    int n = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    Py_BEGIN_ALLOW_THREADS
    for (unsigned long spins = 1;; spins++) {
        n = ibv_poll_cq(cq, max, wc);
        if (n != 0 || spin_ms <= 0)
            break;
        /* The peer may share this CPU (one-vCPU guests): let it run between polls. */
        if (share_cpu)
            sched_yield();
        /* Reading the clock can cost a trap (an HPET clocksource in a VM): seldom. */
        if (spins % 64)
            continue;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= spin_ms)
            break;
    }
    Py_END_ALLOW_THREADS
    if (n < 0)
        return rdma_errno("ibv_poll_cq", -n);
    PyObject *out = PyList_New(n);
    if (!out)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *tup = Py_BuildValue("(KiiI)", (unsigned long long)wc[i].wr_id, (int)wc[i].status,
                                      (int)wc[i].opcode, wc[i].byte_len);
        if (!tup) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, tup);
    }
    return out;
}

/* poll_send(max=16, spin_ms=0) / poll_recv(...): [(wr_id, status, opcode, byte_len)] */
static PyObject *Endpoint_poll_send(Endpoint *self, PyObject *args)
{
    int max = 16, spin = 0;
    if (!PyArg_ParseTuple(args, "|ii", &max, &spin))
        return NULL;
    return poll_cq(self->scq, max, spin);
}

static PyObject *Endpoint_poll_recv(Endpoint *self, PyObject *args)
{
    int max = 16, spin = 0;
    if (!PyArg_ParseTuple(args, "|ii", &max, &spin))
        return NULL;
    return poll_cq(self->rcq, max, spin);
}

/* event_private_data(): the private data of the CM event the cm_id holds, or b"". */
static PyObject *Endpoint_event_private_data(Endpoint *self, PyObject *Py_UNUSED(ignored))
{
    struct rdma_cm_event *ev = self->id ? self->id->event : NULL;
    if (!ev || !ev->param.conn.private_data)
        return PyBytes_FromStringAndSize("", 0);
    return PyBytes_FromStringAndSize(ev->param.conn.private_data, ev->param.conn.private_data_len);
}

/* cm_event_pending(): a CM event (e.g. DISCONNECTED) waits on the cm_id's channel. */
static PyObject *Endpoint_cm_event_pending(Endpoint *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->id || !self->id->channel)
        Py_RETURN_FALSE;
    struct pollfd p = { .fd = self->id->channel->fd, .events = POLLIN };
    return PyBool_FromLong(poll(&p, 1, 0) > 0);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * pingpong(iters, initiator, send_addr, length, lkey, recv_addr, recv_len, recv_lkey, timeout=30, yield=0)
 * The benchmark's message loop with no Python between messages: Send, wait for the
 * peer's Send, repost the Receive. Returns (seconds, completed).
 */
static PyObject *Endpoint_pingpong(Endpoint *self, PyObject *args)
{
    unsigned long long iters, saddr, raddr;
    unsigned int length, lkey, rlen, rlkey;
    int initiator;
    double timeout = 30.0;
    int yield = 0;
    if (!PyArg_ParseTuple(args, "KpKIIKII|dp", &iters, &initiator, &saddr, &length, &lkey, &raddr, &rlen,
                          &rlkey, &timeout, &yield))
        return NULL;
    unsigned long long done = 0;
    int err = 0;
    const char *what = NULL;
    double t0 = now();
    Py_BEGIN_ALLOW_THREADS
    struct ibv_sge sge = { .addr = saddr, .length = length, .lkey = lkey };
    struct ibv_send_wr swr = { .wr_id = 1ULL << 40, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                               .send_flags = IBV_SEND_SIGNALED }, *sbad;
    /* Completions are counted by kind, whichever CQ (one shared or two) they come from: a
     * Receive may complete while the Send before it still waits for its ACK. */
    long sends = 0, recvs = 0;
    for (unsigned long long i = 0; i < iters && !what; i++) {
        if (initiator) {
            if ((err = ibv_post_send(self->qp, &swr, &sbad))) { what = "ibv_post_send"; break; }
        }
        long want_s = 1, want_r = 1;
        for (int phase = 0; phase < (initiator ? 1 : 2) && !what; phase++) {
            if (!initiator && phase == 1) {
                if ((err = ibv_post_send(self->qp, &swr, &sbad))) { what = "ibv_post_send"; break; }
            }
            /* responder: first its Receive, then its Send; initiator: both */
            long need_s = initiator ? want_s : (phase == 1), need_r = initiator ? want_r : (phase == 0);
            double start = now();
            unsigned long spins = 0;
            while ((need_s && sends < need_s) || (need_r && recvs < need_r)) {
                struct ibv_wc wc[4];
                int n = ibv_poll_cq(self->rcq, 4, wc);
                if (n == 0 && self->scq != self->rcq)
                    n = ibv_poll_cq(self->scq, 4, wc);
                if (n < 0) { what = "ibv_poll_cq"; err = -n; break; }
                for (int k = 0; k < n; k++) {
                    if (wc[k].status != IBV_WC_SUCCESS) { what = ibv_wc_status_str(wc[k].status); break; }
                    if (wc[k].opcode & IBV_WC_RECV) {
                        recvs++;
                        unsigned long long slot = wc[k].wr_id;
                        struct ibv_sge rs = { .addr = raddr + slot * rlen, .length = rlen, .lkey = rlkey };
                        struct ibv_recv_wr rwr = { .wr_id = slot, .sg_list = &rs, .num_sge = 1 }, *rbad;
                        if ((err = ibv_post_recv(self->qp, &rwr, &rbad))) { what = "ibv_post_recv"; break; }
                    } else {
                        sends++;
                    }
                }
                if (what)
                    break;
                if (n == 0) {
                    if (yield)
                        sched_yield();
                    if (++spins % 4096 == 0 && now() - start > timeout) { what = "timed out"; break; }
                }
            }
            if (need_s)
                sends -= need_s;
            if (need_r)
                recvs -= need_r;
        }
        if (what)
            break;
        done++;
    }
    Py_END_ALLOW_THREADS
    if (what) {
        if (err)
            return rdma_errno(what, err);
        PyErr_Format(HotpathError, "pingpong stopped after %llu messages: %s", done, what);
        return NULL;
    }
    return Py_BuildValue("(dK)", now() - t0, done);
}

/*
 * rdma_loop(iters, op, addr, length, lkey, remote_addr, rkey, depth=1, timeout=30, yield=0)
 * The benchmark's one-sided loop: RDMA WRITEs or READs (op OP_WRITE or OP_READ) of the same
 * buffer, in batches of up to depth work requests chained behind one doorbell (one
 * ibv_post_send), each batch waited for before the next.  Returns (seconds, completed).
 */
static PyObject *Endpoint_rdma_loop(Endpoint *self, PyObject *args)
{
    unsigned long long iters, laddr, raddr;
    unsigned int op, length, lkey, rkey, depth = 1;
    double timeout = 30.0;
    int yield = 0;
    if (!PyArg_ParseTuple(args, "KIKIIKI|Idp", &iters, &op, &laddr, &length, &lkey, &raddr, &rkey, &depth,
                          &timeout, &yield))
        return NULL;
    if (op != OP_WRITE && op != OP_READ) {
        PyErr_Format(PyExc_ValueError, "rdma_loop takes OP_WRITE or OP_READ, not %u", op);
        return NULL;
    }
    if (depth < 1 || depth > 32) {
        PyErr_SetString(PyExc_ValueError, "rdma_loop's depth is 1 to 32");
        return NULL;
    }
    struct ibv_send_wr wrs[32], *bad;
    struct ibv_sge sge = { .addr = laddr, .length = length, .lkey = lkey };
    memset(wrs, 0, sizeof(wrs));
    for (unsigned int i = 0; i < depth; i++) {
        wrs[i].wr_id = i;
        wrs[i].sg_list = &sge;
        wrs[i].num_sge = 1;
        wrs[i].opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
        wrs[i].send_flags = IBV_SEND_SIGNALED;
        wrs[i].wr.rdma.remote_addr = raddr;
        wrs[i].wr.rdma.rkey = rkey;
        wrs[i].next = i + 1 < depth ? &wrs[i + 1] : NULL;
    }
    unsigned long long done = 0;
    int err = 0;
    const char *what = NULL;
    double t0 = now();
    Py_BEGIN_ALLOW_THREADS
    while (done < iters && !what) {
        unsigned int batch = iters - done < depth ? (unsigned int)(iters - done) : depth;
        /* A shorter last batch: cut the chain there, and mend it afterwards. */
        wrs[batch - 1].next = NULL;
        err = ibv_post_send(self->qp, wrs, &bad);
        wrs[batch - 1].next = batch < depth ? &wrs[batch] : NULL;
        if (err) { what = "ibv_post_send"; break; }
        unsigned int got = 0;
        double start = now();
        unsigned long spins = 0;
        while (got < batch) {
            struct ibv_wc wc[32];
            int n = ibv_poll_cq(self->scq, 32, wc);
            if (n < 0) { what = "ibv_poll_cq"; err = -n; break; }
            for (int k = 0; k < n; k++) {
                if (wc[k].status != IBV_WC_SUCCESS) { what = ibv_wc_status_str(wc[k].status); break; }
            }
            if (what)
                break;
            got += (unsigned int)n;
            if (n == 0) {
                if (yield)
                    sched_yield();
                if (++spins % 4096 == 0 && now() - start > timeout) { what = "timed out"; break; }
            }
        }
        done += got;
    }
    Py_END_ALLOW_THREADS
    if (what) {
        if (err)
            return rdma_errno(what, err);
        PyErr_Format(HotpathError, "rdma_loop stopped after %llu operations: %s", done, what);
        return NULL;
    }
    return Py_BuildValue("(dK)", now() - t0, done);
}

/* callgrind_loop(on): callgrind counts from here (on: costs zeroed) or stops counting;
 * returns whether this process runs under valgrind. */
static PyObject *callgrind_loop(PyObject *Py_UNUSED(module), PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
#ifdef HAVE_CALLGRIND
    if (on) {
        CALLGRIND_START_INSTRUMENTATION;
        CALLGRIND_ZERO_STATS;
    } else {
        CALLGRIND_STOP_INSTRUMENTATION;
    }
    return PyBool_FromLong(RUNNING_ON_VALGRIND != 0);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef module_methods[] = {
    {"callgrind_loop", callgrind_loop, METH_O,
     "callgrind_loop(on): count instructions under callgrind from here (True) or no longer (False)"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef Endpoint_methods[] = {
    {"post_recv", (PyCFunction)Endpoint_post_recv, METH_VARARGS, "post_recv(wr_id, addr, length, lkey)"},
    {"post", (PyCFunction)Endpoint_post, METH_VARARGS,
     "post(wr_id, op, addr, length, lkey, remote_addr=0, rkey=0, invalidate=0, signaled=True)"},
    {"post_sends", (PyCFunction)Endpoint_post_sends, METH_O, "post_sends([(wr_id, addr, length, lkey)])"},
    {"poll_send", (PyCFunction)Endpoint_poll_send, METH_VARARGS, "poll_send(max=16, spin_ms=0)"},
    {"poll_recv", (PyCFunction)Endpoint_poll_recv, METH_VARARGS, "poll_recv(max=16, spin_ms=0)"},
    {"event_private_data", (PyCFunction)Endpoint_event_private_data, METH_NOARGS,
     "private data of the CM event held by the rdma_cm_id"},
    {"cm_event_pending", (PyCFunction)Endpoint_cm_event_pending, METH_NOARGS,
     "whether a CM event (such as the peer's disconnect) is waiting"},
    {"pingpong", (PyCFunction)Endpoint_pingpong, METH_VARARGS, "the benchmark's Send/Receive loop"},
    {"rdma_loop", (PyCFunction)Endpoint_rdma_loop, METH_VARARGS,
     "rdma_loop(iters, op, addr, length, lkey, remote_addr, rkey, depth=1, timeout=30, yield=False)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EndpointType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rdmaspy.traffic._hotpath.Endpoint",
    .tp_basicsize = sizeof(Endpoint),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Endpoint(cmid_or_qp, qp_num): the QP and CQs of a pyverbs CMID or QP",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Endpoint_init,
    .tp_dealloc = (destructor)Endpoint_dealloc,
    .tp_methods = Endpoint_methods,
};

static struct PyModuleDef hotpath_module = {
    PyModuleDef_HEAD_INIT, "_hotpath", "The traffic generator's native hot path (libibverbs).", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__hotpath(void)
{
    if (PyType_Ready(&EndpointType) < 0)
        return NULL;
    share_cpu = sysconf(_SC_NPROCESSORS_ONLN) < 2;
    PyObject *m = PyModule_Create(&hotpath_module);
    if (!m)
        return NULL;
    HotpathError = PyErr_NewException("rdmaspy.traffic._hotpath.HotpathError", PyExc_OSError, NULL);
    Py_INCREF(HotpathError);
    PyModule_AddObject(m, "HotpathError", HotpathError);
    Py_INCREF(&EndpointType);
    PyModule_AddObject(m, "Endpoint", (PyObject *)&EndpointType);
    PyModule_AddIntConstant(m, "OP_SEND", OP_SEND);
    PyModule_AddIntConstant(m, "OP_SEND_INV", OP_SEND_INV);
    PyModule_AddIntConstant(m, "OP_WRITE", OP_WRITE);
    PyModule_AddIntConstant(m, "OP_READ", OP_READ);
    return m;
}
