/*
 * A summary line's bytes in one call: the columns rdmaspy/output/text.py's summary_bytes makes for every
 * packet (the number, the seconds since the first frame, the addresses and protocol, the length, the
 * info), without the strings, encodings and joins each column costs in Python.  Built with the compiled
 * decoder (setup.py); summary_bytes stays the reference and the fallback, and the two are tested to give
 * the same bytes (tests/test_summary_line.py).
 *
 * line(num, us, middle, length, text) -> bytes
 *   b"%7d %5d.%06d %s %5d %s" % (num, us // 10**6, us % 10**6, middle, length, text.encode()), for
 *   num, us and length from 0 to 2**63 - 1; ``middle`` is bytes (the address and protocol columns),
 *   ``text`` a str.  ValueError for a negative number (the caller formats those itself).
 *   ``length`` may be the frame's bytes (their length: no int made for it), ``text`` a list of str
 *   (joined by spaces, as " ".join(text): no str made for the Info column's pieces).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Two decimal digits at a time: half the divisions of one at a time (a line holds some twenty digits). */
static const char PAIRS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* ``v``'s decimal digits written back from ``end``: where they start. */
static char *
put_digits(char *end, uint64_t v)
{
    char *d = end;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        d -= 2;
        d[0] = PAIRS[2 * r];
        d[1] = PAIRS[2 * r + 1];
    }
    if (v >= 10) {
        d -= 2;
        d[0] = PAIRS[2 * v];
        d[1] = PAIRS[2 * v + 1];
    } else {
        *--d = (char)('0' + v);
    }
    return d;
}

/* 10**n for n up to 19. */
static const uint64_t POW10[20] = {
    1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL,
    10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
    1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
    10000000000000000000ULL,
};

/* ``v`` in decimal, right-aligned in ``width`` columns with ``fill`` ('0' or ' '), at p; the end.  A number that
 * fits its width (nearly every one) is written back from the column's end and the fill before it a byte at a
 * time: no count of its digits first, no copy of them, no libc call for a few bytes (GCC would make the fill's
 * loop a memset call). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
static char *
put_number(char *p, uint64_t v, int width, char fill)
{
    if (width < 1 || width > 19 || v >= POW10[width]) {
        int n = 1;
        while (n < 20 && v >= POW10[n])
            n++;
        width = n;      /* wider than the column: its digits alone */
    }
    char *end = p + width;
    char *d = put_digits(end, v);
    while (d > p)
        *--d = fill;
    return end;
}

/* The columns ``v`` takes in decimal, ``width`` at least. */
static Py_ssize_t
columns(uint64_t v, int width)
{
    int n = 1;
    uint64_t next = 10;         /* the least number of n + 1 digits; 10**19 is the last that fits */
    while (n < 20 && v >= next) {
        n++;
        if (n < 20)
            next *= 10;
    }
    return n > width ? n : width;
}

static int
non_negative(PyObject *obj, uint64_t *out)
{
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred())
        return 0;
    if (v < 0) {
        PyErr_SetString(PyExc_ValueError, "line: a column is negative");
        return 0;
    }
    *out = (uint64_t)v;
    return 1;
}

/* The Info pieces of a list joined: their UTF-8 (a str's own bytes when ASCII: no copy) kept in ``texts`` (up
 * to ``max``, else NULL and nothing set: the caller joins), the joined length in ``*total``; 0 on an error. */
#define PIECES 16
static int
pieces(PyObject *list, const char **texts, Py_ssize_t *lens, Py_ssize_t *total)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    Py_ssize_t sum = n > 0 ? n - 1 : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (!PyUnicode_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "line: the text must be a str or a list of str");
            return 0;
        }
        texts[i] = PyUnicode_AsUTF8AndSize(item, &lens[i]);
        if (texts[i] == NULL)
            return 0;
        sum += lens[i];
    }
    *total = sum;
    return 1;
}

static PyObject *
line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    uint64_t num, us, length;
    const char *text = NULL;
    Py_ssize_t text_len;
    const char *texts[PIECES];
    Py_ssize_t lens[PIECES];
    Py_ssize_t npieces = -1;        /* -1: one str in text */
    char *middle;
    Py_ssize_t middle_len;
    PyObject *out;
    PyObject *joined = NULL;
    char *p;

    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "line(num, us, middle, length, text)");
        return NULL;
    }
    if (!non_negative(args[0], &num) || !non_negative(args[1], &us))
        return NULL;
    if (PyBytes_Check(args[3]))
        length = (uint64_t)PyBytes_GET_SIZE(args[3]);
    else if (PyLong_Check(args[3])) {
        if (!non_negative(args[3], &length))
            return NULL;
    } else {
        Py_ssize_t size = PyObject_Length(args[3]);       /* a bytearray's, a memoryview's */
        if (size < 0)
            return NULL;
        length = (uint64_t)size;
    }
    if (PyBytes_AsStringAndSize(args[2], &middle, &middle_len) < 0)
        return NULL;
    if (PyList_Check(args[4]) && PyList_GET_SIZE(args[4]) <= PIECES) {
        npieces = PyList_GET_SIZE(args[4]);
        if (!pieces(args[4], texts, lens, &text_len))
            return NULL;
    } else {
        PyObject *t = args[4];
        if (PyList_Check(t)) {      /* more pieces than kept here: joined as str.join would */
            PyObject *space = PyUnicode_FromStringAndSize(" ", 1);
            if (space == NULL)
                return NULL;
            joined = t = PyUnicode_Join(space, t);
            Py_DECREF(space);
            if (joined == NULL)
                return NULL;
        } else if (!PyUnicode_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "line: the text must be a str or a list of str");
            return NULL;
        }
        text = PyUnicode_AsUTF8AndSize(t, &text_len);       /* an ASCII str's own bytes: no copy */
        if (text == NULL) {
            Py_XDECREF(joined);
            return NULL;
        }
    }
    out = PyBytes_FromStringAndSize(NULL, columns(num, 7) + 1 + columns(us / 1000000, 5) + 1 + 6 + 1 + middle_len
                                    + 1 + columns(length, 5) + 1 + text_len);
    if (out == NULL) {
        Py_XDECREF(joined);
        return NULL;
    }
    if (out == NULL)
        return NULL;
    p = PyBytes_AS_STRING(out);
    p = put_number(p, num, 7, ' ');
    *p++ = ' ';
    p = put_number(p, us / 1000000, 5, ' ');
    *p++ = '.';
    p = put_number(p, us % 1000000, 6, '0');
    *p++ = ' ';
    memcpy(p, middle, (size_t)middle_len);
    p += middle_len;
    *p++ = ' ';
    p = put_number(p, length, 5, ' ');
    *p++ = ' ';
    if (npieces < 0) {
        memcpy(p, text, (size_t)text_len);
        Py_XDECREF(joined);     /* the bytes of a joined str are copied: it may go */
        return out;
    }
    for (Py_ssize_t i = 0; i < npieces; i++) {
        if (i)
            *p++ = ' ';
        memcpy(p, texts[i], (size_t)lens[i]);
        p += lens[i];
    }
    return out;
}

static PyMethodDef methods[] = {
    {"line", (PyCFunction)(void (*)(void))line, METH_FASTCALL,
     "line(num, us, middle, length, text) -> a summary line's bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_line", "The summary line's columns in C.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__line(void)
{
    return PyModule_Create(&module);
}
