/*
 * The check that text from a capture holds nothing a terminal would obey, for the line writer's blocks
 * (rdmaspy/output/safe.py holds the rules and the escaping; this is its common case, in C).
 *
 * newlines_if_safe(data) -> int
 *   The number of newline bytes in ``data`` when it holds no other C0 control, no DEL and no C1 control
 *   (UTF-8 0xC2 0x80-0x9F); -1 when it holds one.  The writer joins its lines with newlines and compares
 *   the count with the joins it made: one more is a line's own newline, which must show escaped too.
 *
 * A summary line is some 110 bytes and a block 64 KiB: thirty-two bytes a step with AVX2 where the CPU
 * has it, then sixteen with SSE2 (every x86-64 has it), a byte a step elsewhere or where a step holds
 * 0xC2 (its next byte decides).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(RDMASPY_PORTABLE)
#include <emmintrin.h>
#define RDMASPY_SSE2 1
#endif

/* The bytes [p, stop) one at a time, the data ending at end: newlines counted into *lines, 0 if one is
 * unsafe. */
static int
scan_bytes(const unsigned char *p, const unsigned char *stop, const unsigned char *end, Py_ssize_t *lines)
{
    for (; p < stop; p++) {
        unsigned char c = *p;
        if (c == '\n')
            (*lines)++;
        else if (c < 0x20 || c == 0x7f)
            return 0;
        else if (c == 0xc2 && p + 1 < end && p[1] >= 0x80 && p[1] <= 0x9f)
            return 0;
    }
    return 1;
}

#ifdef RDMASPY_SSE2
#include <immintrin.h>

/* One vector step's answer from its masks (a bit a byte): newlines counted into *lines, or, where the
 * step holds another byte of interest, the step byte by byte (0xC2 may start a harmless character,
 * "µ", "§": the next step's first byte in view); 0 if a byte is unsafe. */
static inline int
step(const unsigned char *p, int width, const unsigned char *end, unsigned newline, unsigned odd,
     Py_ssize_t *lines)
{
    if (odd & ~newline)
        return scan_bytes(p, p + width, end, lines);
    /* a bit a newline, rarely more than one a step: cleared one by one (a popcount without the CPU's
     * instruction, which x86-64's baseline lacks, is a library call of some 20) */
    while (newline) {
        (*lines)++;
        newline &= newline - 1;
    }
    return 1;
}

static int have_avx2;       /* set at import: the CPU runs AVX2 (32 bytes a step) */

/* The bytes from *pp 32 at a time with AVX2, as the SSE2 loop below does 16: *pp is left where it
 * stopped (fewer than 32 bytes left); 0 if a byte is unsafe. */
__attribute__((target("avx2")))
static int
scan_avx2(const unsigned char **pp, const unsigned char *end, Py_ssize_t *lines)
{
    const unsigned char *p = *pp;
    const __m256i c1f = _mm256_set1_epi8(0x1f);
    const __m256i nl = _mm256_set1_epi8('\n');
    const __m256i del = _mm256_set1_epi8(0x7f);
    const __m256i c2 = _mm256_set1_epi8((char)0xc2);
    while (end - p >= 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)p);
        __m256i low = _mm256_cmpeq_epi8(_mm256_min_epu8(v, c1f), v);
        unsigned newline = (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, nl));
        unsigned odd = (unsigned)_mm256_movemask_epi8(_mm256_or_si256(_mm256_or_si256(low, _mm256_cmpeq_epi8(v, del)),
                                                                      _mm256_cmpeq_epi8(v, c2)));
        if (!step(p, 32, end, newline, odd, lines))
            return 0;
        p += 32;
    }
    *pp = p;
    return 1;
}
#endif

static Py_ssize_t
newlines_if_safe_c(const unsigned char *p, Py_ssize_t n)
{
    const unsigned char *end = p + n;
    Py_ssize_t lines = 0;
#ifdef RDMASPY_SSE2
    if (have_avx2 && !scan_avx2(&p, end, &lines))
        return -1;
    const __m128i c1f = _mm_set1_epi8(0x1f);
    const __m128i nl = _mm_set1_epi8('\n');
    const __m128i del = _mm_set1_epi8(0x7f);
    const __m128i c2 = _mm_set1_epi8((char)0xc2);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i low = _mm_cmpeq_epi8(_mm_min_epu8(v, c1f), v);          /* bytes below 0x20 */
        unsigned newline = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl));
        unsigned odd = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(low, _mm_cmpeq_epi8(v, del)),
                                                                _mm_cmpeq_epi8(v, c2)));
        if (!step(p, 16, end, newline, odd, &lines))
            return -1;
        p += 16;
    }
#endif
    if (!scan_bytes(p, end, end, &lines))
        return -1;
    return lines;
}

static PyObject *
newlines_if_safe(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    Py_ssize_t lines;

    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    lines = newlines_if_safe_c((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(lines);
}

static PyMethodDef methods[] = {
    {"newlines_if_safe", newlines_if_safe, METH_O,
     "newlines_if_safe(data) -> the number of newlines in data, or -1 if it holds another control character"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "Control characters in text, found in C.", -1,
                                    methods};

PyMODINIT_FUNC
PyInit__scan(void)
{
#ifdef RDMASPY_SSE2
    __builtin_cpu_init();
    have_avx2 = __builtin_cpu_supports("avx2");
#endif
    return PyModule_Create(&module);
}
