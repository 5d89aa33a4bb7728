/*
 * The RoCEv2 ICRC in one call: the per-packet cost of rdmaspy.dissectors.infiniband.icrc_rocev2
 * (copy the IP/UDP/BTH prefix, set the variant fields to ones, two CRC-32 runs) without the
 * interpreter around it.  Built by setup.py next to the mypyc-compiled decoder; the Python
 * function stays the reference, and the two are tested to agree (tests/test_icrc.py).
 *
 * icrc_rocev2(buf, ip_off, version, bth_off, icrc_off) -> int
 *   The ICRC (IBTA vol. 1 7.8.1, Annex A17): CRC-32 over 8 bytes of ones standing for the LRH,
 *   the IPv4 header with TOS, TTL and checksum set to ones (IPv6: traffic class, flow label and
 *   hop limit), the UDP header with its checksum set to ones, the BTH with byte 4 set to ones,
 *   and everything after the BTH up to the ICRC.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <zlib.h>

static PyObject *
icrc_rocev2(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const unsigned char ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    unsigned char head[128];
    Py_buffer view;
    Py_ssize_t ip_off, version, bth, icrc_off, n;
    uLong crc;

    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "icrc_rocev2(buf, ip_off, version, bth_off, icrc_off)");
        return NULL;
    }
    ip_off = PyLong_AsSsize_t(args[1]);
    version = PyLong_AsSsize_t(args[2]);
    bth = PyLong_AsSsize_t(args[3]);
    icrc_off = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    n = bth + 5 - ip_off;                   /* IP, UDP and BTH bytes 0..4 */
    if (ip_off < 0 || n < 13 || n > (Py_ssize_t)sizeof(head) || icrc_off < bth + 5 || icrc_off > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "icrc_rocev2: offsets outside the buffer");
        return NULL;
    }
    memcpy(head, (const unsigned char *)view.buf + ip_off, (size_t)n);
    if (version == 4) {
        Py_ssize_t ihl = (head[0] & 15) * 4;
        if (ihl + 8 > n - 5) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "icrc_rocev2: IPv4 header longer than its place");
            return NULL;
        }
        head[1] = 0xff;                     /* TOS: DSCP and ECN */
        head[8] = 0xff;                     /* TTL */
        head[10] = head[11] = 0xff;         /* header checksum */
        head[ihl + 6] = head[ihl + 7] = 0xff;   /* UDP checksum */
    } else {
        Py_ssize_t u = bth - 8 - ip_off;
        if (u < 0 || u + 8 > n) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "icrc_rocev2: UDP header outside the buffer");
            return NULL;
        }
        head[0] |= 0x0f;                    /* traffic class and flow label */
        head[1] = head[2] = head[3] = 0xff;
        head[7] = 0xff;                     /* hop limit */
        head[u + 6] = head[u + 7] = 0xff;   /* UDP checksum */
    }
    head[n - 1] = 0xff;                     /* BTH byte 4: FECN, BECN, reserved */
    crc = crc32(0L, ones, 8);
    crc = crc32(crc, head, (uInt)n);
    crc = crc32(crc, (const unsigned char *)view.buf + bth + 5, (uInt)(icrc_off - bth - 5));
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyMethodDef methods[] = {
    {"icrc_rocev2", (PyCFunction)(void (*)(void))icrc_rocev2, METH_FASTCALL,
     "icrc_rocev2(buf, ip_off, version, bth_off, icrc_off) -> the RoCEv2 ICRC"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_icrc", "The RoCEv2 ICRC in C.", -1, methods};

PyMODINIT_FUNC
PyInit__icrc(void)
{
    return PyModule_Create(&module);
}
