/*
 * Hexadecimal text for the info lines of the per-packet path, in C (rdmaspy/dissectors/hexfmt.py holds
 * the Python that stays the reference and the fallback; tests/test_hexfmt.py checks they agree).
 *
 * hex8(n) -> str   "%08x" % n for 0 <= n < 2**32: eight lowercase digits (an XID, an R_Key, a CRC)
 * hexn(n) -> str   "%x" % n for 0 <= n < 2**64: no padding (a virtual address, a tagged offset)
 * with_decimal(head, n, tail='') -> str   head + str(n) + tail: an Info line with a number ("... PSN=1234 ACK")
 * Any other int, or another type: ValueError or TypeError, and the Python function formats it.
 *
 * Compiled with mypyc, hex8 is one string built from four two-digit pieces (some 700 instructions with
 * its call) and hexn a call of the built-in hex() and a slice (some 1,300): here, the digits are
 * written straight into a new string.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static const char DIGITS[] = "0123456789abcdef";

/* The value of an int from 0 to ``max``; -1 with an error set otherwise. */
static int
unsigned_value(PyObject *arg, unsigned long long max, unsigned long long *out)
{
    if (!PyLong_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "an int is needed");
        return -1;
    }
    unsigned long long u = PyLong_AsUnsignedLongLong(arg);     /* OverflowError below 0 or from 2**64 */
    if ((u == (unsigned long long)-1 && PyErr_Occurred()) || u > max) {
        PyErr_SetString(PyExc_ValueError, "out of range");
        return -1;
    }
    *out = u;
    return 0;
}

static PyObject *
hex8(PyObject *self, PyObject *arg)
{
    unsigned long long v;
    if (unsigned_value(arg, 0xFFFFFFFFULL, &v) < 0)
        return NULL;
    PyObject *s = PyUnicode_New(8, 127);
    if (s == NULL)
        return NULL;
    Py_UCS1 *p = PyUnicode_1BYTE_DATA(s);
    for (int i = 7; i >= 0; i--) {
        p[i] = (Py_UCS1)DIGITS[v & 15];
        v >>= 4;
    }
    return s;
}

static PyObject *
hexn(PyObject *self, PyObject *arg)
{
    unsigned long long v;
    if (unsigned_value(arg, ~0ULL, &v) < 0)
        return NULL;
    int n = 1;
    for (unsigned long long rest = v >> 4; rest; rest >>= 4)
        n++;
    PyObject *s = PyUnicode_New(n, 127);
    if (s == NULL)
        return NULL;
    Py_UCS1 *p = PyUnicode_1BYTE_DATA(s);
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (Py_UCS1)DIGITS[v & 15];
        v >>= 4;
    }
    return s;
}

/* head + str(n) + tail for an ASCII head and tail and 0 <= n < 2**64, the digits written between copies of
 * the two; anything else through the general operations (the same text). */
static PyObject *
with_decimal(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 3 || !PyUnicode_Check(args[0]) || !PyLong_Check(args[1])
            || (nargs == 3 && !PyUnicode_Check(args[2]))) {
        PyErr_SetString(PyExc_TypeError, "with_decimal(head: str, n: int, tail: str = '')");
        return NULL;
    }
    PyObject *head = args[0];
    PyObject *tail = nargs == 3 ? args[2] : NULL;
    unsigned long long v = PyLong_AsUnsignedLongLong(args[1]);
    if ((v == (unsigned long long)-1 && PyErr_Occurred()) || !PyUnicode_IS_ASCII(head)
            || (tail != NULL && !PyUnicode_IS_ASCII(tail))) {
        PyErr_Clear();
        PyObject *digits = PyObject_Str(args[1]);
        if (digits == NULL)
            return NULL;
        PyObject *joined = PyUnicode_Concat(head, digits);
        Py_DECREF(digits);
        if (joined == NULL || tail == NULL)
            return joined;
        PyObject *whole = PyUnicode_Concat(joined, tail);
        Py_DECREF(joined);
        return whole;
    }
    char digits[20];
    int n = 0;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    Py_ssize_t h = PyUnicode_GET_LENGTH(head);
    Py_ssize_t t = tail != NULL ? PyUnicode_GET_LENGTH(tail) : 0;
    PyObject *s = PyUnicode_New(h + n + t, 127);
    if (s == NULL)
        return NULL;
    Py_UCS1 *p = PyUnicode_1BYTE_DATA(s);
    memcpy(p, PyUnicode_1BYTE_DATA(head), (size_t)h);
    memcpy(p + h, digits + sizeof digits - n, (size_t)n);
    if (t)
        memcpy(p + h + n, PyUnicode_1BYTE_DATA(tail), (size_t)t);
    return s;
}

static PyMethodDef methods[] = {
    {"with_decimal", (PyCFunction)(void (*)(void))with_decimal, METH_FASTCALL,
     "with_decimal(head, n, tail='') -> str: head + str(n) + tail"},
    {"hex8", hex8, METH_O, "hex8(n) -> str: '%08x' % n for 0 <= n < 2**32"},
    {"hexn", hexn, METH_O, "hexn(n) -> str: '%x' % n for 0 <= n < 2**64"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_hex", "Hexadecimal text of the info lines, in C.", -1,
                                    methods};

PyMODINIT_FUNC
PyInit__hex(void)
{
    return PyModule_Create(&module);
}
