/*
 * The RoCEv2 ICRC in one call: the per-packet cost of rdmaspy.dissectors.infiniband.icrc_rocev2
 * (copy the IP/UDP/BTH prefix, set the variant fields to ones, two CRC-32 runs) without the
 * interpreter around it.  Built by setup.py next to the mypyc-compiled decoder; the Python
 * function stays the reference, and the two are tested to agree (tests/test_icrc.py).
 *
 * icrc_rocev2(buf, ip_off, version, bth_off, icrc_off) -> int
 * icrc_rocev2_ipv4_ok(buf, ip_off) -> bool   whether the packet carries that ICRC (its end from UDP's length)
 *   The ICRC (IBTA vol. 1 7.8.1, Annex A17): CRC-32 over 8 bytes of ones standing for the LRH,
 *   the IPv4 header with TOS, TTL and checksum set to ones (IPv6: traffic class, flow label and
 *   hop limit), the UDP header with its checksum set to ones, the BTH with byte 4 set to ones,
 *   and everything after the BTH up to the ICRC.
 *
 * crc32(data, value=0) -> int     zlib.crc32's answer, the long runs folded with PCLMULQDQ
 * crc32c(data, value=0) -> int    the CRC-32c of MPA (RFC 5044), which iwarp_mpa.crc32c spells out
 *
 * Built with -DRDMASPY_PORTABLE (or off x86-64) it uses zlib and a table only.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(RDMASPY_PORTABLE)
#include <immintrin.h>
#define RDMASPY_X86 1
#endif

/* --- CRC-32 (IEEE, reflected, zlib's) by carry-less multiplication ----------------------------------
 * zlib 1.2's table code takes about three instructions a byte; PCLMULQDQ folds 64 bytes in eight.  The
 * folding keeps a 128-bit remainder congruent (mod P) to the bytes folded so far; the last 16 bytes of
 * it and the tail are handed to zlib, which finishes the CRC.  Fold constants, in the reflected form
 * (bit-reversed x^n mod P, shifted left by one): x^544 and x^480 fold 512 bits ahead, x^160 and x^96
 * fold 128; the low 64-bit half of a lane takes the first of each pair.  tests/test_icrc.py checks the
 * result against zlib at every length and alignment that matters.
 */
static int have_clmul;   /* set at import from the CPU's feature bits */
static int have_sse42;

#ifdef RDMASPY_X86
__attribute__((target("pclmul,sse2")))
static inline __m128i
fold(__m128i x, __m128i k, __m128i data)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), data);
}

/* zlib's crc32(crc, ...) of the 64 bytes at ``first`` followed by the n bytes at p (the two may lie
 * apart: the ICRC's masked header copy and the packet's payload run as one stream). */
__attribute__((target("pclmul,sse2")))
static uLong
crc32_clmul_from(uLong crc, const unsigned char *first, const unsigned char *p, size_t n)
{
    const __m128i k512 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i k128 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    unsigned char rest[16];
    __m128i x0 = _mm_loadu_si128((const __m128i *)first);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(first + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(first + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(first + 48));
    /* zlib's running value is the complement of the register; the register enters as the first word */
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)(uint32_t)~crc));
    while (n >= 64) {
        x0 = fold(x0, k512, _mm_loadu_si128((const __m128i *)p));
        x1 = fold(x1, k512, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = fold(x2, k512, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = fold(x3, k512, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    x0 = fold(x0, k128, x1);
    x0 = fold(x0, k128, x2);
    x0 = fold(x0, k128, x3);
    while (n >= 16) {
        x0 = fold(x0, k128, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    /* The remainder, then the tail, from a zero register: zlib's crc32 from ~0 (its complement) */
    _mm_storeu_si128((__m128i *)rest, x0);
    crc = crc32(0xffffffffUL, rest, 16);
    return crc32(crc, p, (uInt)n);
}

/* zlib's crc32(crc, p, n) for n >= 64. */
static uLong
crc32_clmul(uLong crc, const unsigned char *p, size_t n)
{
    return crc32_clmul_from(crc, p, p + 64, n - 64);
}
#endif

static uLong
crc32_any(uLong crc, const unsigned char *p, size_t n)
{
#ifdef RDMASPY_X86
    if (have_clmul && n >= 64)
        return crc32_clmul(crc, p, n);
#endif
    while (n > 0x40000000) {            /* zlib's length is an unsigned int */
        crc = crc32(crc, p, 0x40000000);
        p += 0x40000000;
        n -= 0x40000000;
    }
    return crc32(crc, p, (uInt)n);
}

/* --- CRC-32c (Castagnoli, reflected), as MPA (RFC 5044) and iSCSI use it --------------------------------
 * SSE4.2 has an instruction for it (eight bytes a step); elsewhere a table, a byte a step.
 */
static uint32_t crc32c_table[256];

static void
crc32c_init_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc32c_table[i] = c;
    }
}

#ifdef RDMASPY_X86
__attribute__((target("sse4.2")))
static uint32_t
crc32c_sse42(uint32_t c, const unsigned char *p, size_t n)
{
    uint64_t c64 = c;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = _mm_crc32_u64(c64, w);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--)
        c = _mm_crc32_u8(c, *p++);
    return c;
}
#endif

static uint32_t
crc32c_any(uint32_t crc, const unsigned char *p, size_t n)
{
    uint32_t c = ~crc;
#ifdef RDMASPY_X86
    if (have_sse42)
        return ~crc32c_sse42(c, p, n);
#endif
    while (n--)
        c = crc32c_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

/* crc(data, value=0): the CRC of a bytes-like object, continuing from value (as zlib.crc32 does). */
static PyObject *
crc_call(PyObject *const *args, Py_ssize_t nargs, const char *usage, int castagnoli)
{
    Py_buffer view;
    unsigned long value = 0;
    uint32_t out;

    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    if (nargs == 2) {
        value = PyLong_AsUnsignedLongMask(args[1]);
        if (value == (unsigned long)-1 && PyErr_Occurred())
            return NULL;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (castagnoli)
        out = crc32c_any((uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
    else
        out = (uint32_t)crc32_any((uLong)(uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(out);
}

static PyObject *
py_crc32(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return crc_call(args, nargs, "crc32(data, value=0)", 0);
}

static PyObject *
py_crc32c(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return crc_call(args, nargs, "crc32c(data, value=0)", 1);
}

/* zlib's crc32 of the 64 bits of ones that stand for the LRH (or the RoCEv2 pseudo-LRH) before the IP
 * header: crc32(0, b"\xff" * 8), the same for every packet. */
#define ONES_CRC 0x2144df1cUL

/* The ICRC of the RoCEv2 packet whose IP header is at ip_off of buf, as icrc_rocev2 says; -1 with an
 * exception set when the offsets do not fit. */
static int
icrc_of(const unsigned char *buf, Py_ssize_t len, Py_ssize_t ip_off, Py_ssize_t version, Py_ssize_t bth,
        Py_ssize_t icrc_off, uLong *out)
{
    unsigned char head[128];
    Py_ssize_t n = bth + 5 - ip_off;        /* IP, UDP and BTH bytes 0..4 */

    if (ip_off < 0 || n < 13 || n > (Py_ssize_t)sizeof(head) || icrc_off < bth + 5 || icrc_off > len) {
        PyErr_SetString(PyExc_ValueError, "icrc_rocev2: offsets outside the buffer");
        return -1;
    }
    memcpy(head, buf + ip_off, (size_t)n);
    if (version == 4) {
        Py_ssize_t ihl = (head[0] & 15) * 4;
        if (ihl + 8 > n - 5) {
            PyErr_SetString(PyExc_ValueError, "icrc_rocev2: IPv4 header longer than its place");
            return -1;
        }
        head[1] = 0xff;                     /* TOS: DSCP and ECN */
        head[8] = 0xff;                     /* TTL */
        head[10] = head[11] = 0xff;         /* header checksum */
        head[ihl + 6] = head[ihl + 7] = 0xff;   /* UDP checksum */
    } else {
        Py_ssize_t u = bth - 8 - ip_off;
        if (u < 0 || u + 8 > n) {
            PyErr_SetString(PyExc_ValueError, "icrc_rocev2: UDP header outside the buffer");
            return -1;
        }
        head[0] |= 0x0f;                    /* traffic class and flow label */
        head[1] = head[2] = head[3] = 0xff;
        head[7] = 0xff;                     /* hop limit */
        head[u + 6] = head[u + 7] = 0xff;   /* UDP checksum */
    }
    head[n - 1] = 0xff;                     /* BTH byte 4: FECN, BECN, reserved */
    const unsigned char *payload = buf + bth + 5;
    size_t plen = (size_t)(icrc_off - bth - 5);
#ifdef RDMASPY_X86
    if (have_clmul && n <= 64 && (size_t)n + plen >= 64) {
        /* the header and the payload's first bytes as the first 64 bytes of one folded run: the header
         * costs no CRC call of its own */
        size_t lead = 64 - (size_t)n;
        memcpy(head + n, payload, lead);
        *out = crc32_clmul_from(ONES_CRC, head, payload + lead, plen - lead);
        return 0;
    }
#endif
    *out = crc32_any(crc32(ONES_CRC, head, (uInt)n), payload, plen);
    return 0;
}

static PyObject *
icrc_rocev2(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t ip_off, version, bth, icrc_off;
    uLong crc;
    int failed;

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
    failed = icrc_of((const unsigned char *)view.buf, view.len, ip_off, version, bth, icrc_off, &crc);
    PyBuffer_Release(&view);
    return failed ? NULL : PyLong_FromUnsignedLong(crc);
}

/* icrc_rocev2_ipv4_ok(buf, ip_off) -> bool: whether the RoCEv2 packet in the IPv4 datagram at ip_off
 * carries the ICRC computed over it, its end where the UDP length says.  The usual answer costs no int
 * object: the ICRC is then the one read from the packet. */
static PyObject *
icrc_rocev2_ipv4_ok(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t ip_off, udp, icrc_off;
    uLong crc;
    const unsigned char *b;

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "icrc_rocev2_ipv4_ok(buf, ip_off)");
        return NULL;
    }
    ip_off = PyLong_AsSsize_t(args[1]);
    if (ip_off == -1 && PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    b = (const unsigned char *)view.buf;
    if (ip_off < 0 || ip_off + 28 > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "icrc_rocev2_ipv4_ok: offsets outside the buffer");
        return NULL;
    }
    udp = ip_off + (b[ip_off] & 15) * 4;
    icrc_off = udp + 8 <= view.len ? udp + ((Py_ssize_t)b[udp + 4] << 8 | b[udp + 5]) - 4 : -1;
    if (icrc_off < 0 || icrc_off + 4 > view.len || icrc_of(b, view.len, ip_off, 4, udp + 8, icrc_off, &crc) < 0) {
        PyBuffer_Release(&view);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "icrc_rocev2_ipv4_ok: offsets outside the buffer");
        return NULL;
    }
    /* sent low byte first */
    uint32_t got = (uint32_t)b[icrc_off] | (uint32_t)b[icrc_off + 1] << 8 | (uint32_t)b[icrc_off + 2] << 16
                   | (uint32_t)b[icrc_off + 3] << 24;
    PyBuffer_Release(&view);
    return PyBool_FromLong((uint32_t)crc == got);
}

static PyMethodDef methods[] = {
    {"icrc_rocev2", (PyCFunction)(void (*)(void))icrc_rocev2, METH_FASTCALL,
     "icrc_rocev2(buf, ip_off, version, bth_off, icrc_off) -> the RoCEv2 ICRC"},
    {"icrc_rocev2_ipv4_ok", (PyCFunction)(void (*)(void))icrc_rocev2_ipv4_ok, METH_FASTCALL,
     "icrc_rocev2_ipv4_ok(buf, ip_off) -> whether the RoCEv2 packet in that IPv4 datagram carries its ICRC"},
    {"crc32", (PyCFunction)(void (*)(void))py_crc32, METH_FASTCALL,
     "crc32(data, value=0) -> zlib.crc32(data, value), folded with PCLMULQDQ where the CPU has it"},
    {"crc32c", (PyCFunction)(void (*)(void))py_crc32c, METH_FASTCALL,
     "crc32c(data, value=0) -> the CRC-32c (Castagnoli) of data, continuing from value"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_icrc", "The RoCEv2 ICRC, CRC-32 and CRC-32c in C.", -1, methods};

PyMODINIT_FUNC
PyInit__icrc(void)
{
#ifdef RDMASPY_X86
    __builtin_cpu_init();
    have_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
    have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
    crc32c_init_table();
    return PyModule_Create(&module);
}
