/*
 * The transport analysis' PSN ring (rdmaspy/analysis/transport.py, PsnRing), its slots in C.
 *
 * A ring is a bytearray of slots, SLOT_SIZE bytes each: the request PSN (-1: empty), its frame, its time
 * and its mark (what tells a copy of the packet from a packet sent again: its ICRC and IPv4
 * identification, 0 when unknown), four native-order 64-bit integers (struct "=qqqq", which the Python
 * fallback in transport.py reads and writes the same way).  A ring holds a power of two of slots, at most
 * RING; a PSN's slot is its low bits (psn & mask, mask the slot count less one, told by the size).
 *
 * put(slots, psn_mark, frame, ts) -> bool
 *   Stores the request in its slot, its PSN the low PSN_BITS of psn_mark and its mark the rest (a mark is
 *   under 2**30); False, storing nothing, when the slot holds another PSN that a ring of RING slots would
 *   keep apart and the ring may still grow (the caller grows it and puts again).
 * lookup(slots, psn) -> (frame, ts, mark) of the slot holding psn, or None
 * copy_of(slots, psn_mark) -> (frame, ts) of the slot holding the PSN if it was put with that mark, or
 *   None (most look-ups of a response find its PSN sent with another mark: no int made for them)
 * grown(slots) -> bytearray        the ring with twice the slots, each entry at its PSN's slot
 *
 * Compiled, each of these is one call where the Python code made three or four generic item accesses of
 * an array (some 400 instructions each) and an int object per value.  Each int a compiled caller passes
 * is an object made and freed (some 150 instructions with its reading here): the mask is not an argument
 * (the size tells it), and put takes the PSN and the mark in one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SLOT_SIZE 32
#define RING 4096
#define PSN_BITS 24

typedef struct {
    int64_t psn, frame, ts, mark;
} Slot;

/* The slots of a bytearray of a power of two of them, at most RING, and *mask their count less one; NULL
 * with an exception set. */
static Slot *
slots_of(PyObject *obj, int64_t *mask)
{
    if (!PyByteArray_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "ring slots must be a bytearray");
        return NULL;
    }
    Py_ssize_t size = PyByteArray_GET_SIZE(obj);
    int64_t count = (int64_t)(size / SLOT_SIZE);
    if (size % SLOT_SIZE != 0 || count < 1 || count > RING || (count & (count - 1)) != 0) {
        PyErr_SetString(PyExc_ValueError, "ring slots must be a power of two of slots, at most RING");
        return NULL;
    }
    *mask = count - 1;
    return (Slot *)PyByteArray_AS_STRING(obj);
}

static int
as_i64(PyObject *obj, int64_t *out)
{
#if LONG_MAX == INT64_MAX
    /* PyLong_AsLongLong goes through _PyLong_AsByteArray for an int of more than one digit (a time in
     * nanoseconds), some 150 instructions; PyLong_AsLong adds up the digits. */
    long v = PyLong_AsLong(obj);
#else
    long long v = PyLong_AsLongLong(obj);
#endif
    if (v == -1 && PyErr_Occurred())
        return 0;
    *out = (int64_t)v;
    return 1;
}

static PyObject *
ring_put(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t mask, psn_mark, frame, ts;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "put(slots, psn_mark, frame, ts)");
        return NULL;
    }
    if (!as_i64(args[1], &psn_mark) || !as_i64(args[2], &frame) || !as_i64(args[3], &ts))
        return NULL;
    if (psn_mark < 0) {
        PyErr_SetString(PyExc_ValueError, "a PSN and a mark are not negative");
        return NULL;
    }
    int64_t psn = psn_mark & ((1 << PSN_BITS) - 1), mark = psn_mark >> PSN_BITS;
    Slot *slots = slots_of(args[0], &mask);
    if (slots == NULL)
        return NULL;
    Slot s;
    char *at = (char *)(slots) + (size_t)(psn & mask) * SLOT_SIZE;
    memcpy(&s, at, SLOT_SIZE);          /* a bytearray's buffer need not be aligned for int64_t */
    if (s.psn >= 0 && s.psn != psn && ((s.psn ^ psn) & (RING - 1)) && mask < RING - 1)
        Py_RETURN_FALSE;
    s.psn = psn;
    s.frame = frame;
    s.ts = ts;
    s.mark = mark;
    memcpy(at, &s, SLOT_SIZE);
    Py_RETURN_TRUE;
}

/* The slot of ``psn`` for lookup: its entry copied to *out; 0 with an exception set on bad arguments. */
static int
slot_of_psn(PyObject *const *args, Py_ssize_t nargs, const char *usage, int64_t *psn, Slot *out)
{
    int64_t mask;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, usage);
        return 0;
    }
    if (!as_i64(args[1], psn))
        return 0;
    Slot *slots = slots_of(args[0], &mask);
    if (slots == NULL)
        return 0;
    memcpy(out, (char *)(slots) + (size_t)(*psn & mask) * SLOT_SIZE, SLOT_SIZE);
    return 1;
}

/* (frame, ts, mark) of a slot's entry as a new tuple, or its first ``n`` of them; NULL with an exception set. */
static PyObject *
entry_tuple(const Slot *s, Py_ssize_t n)
{
    const int64_t values[3] = {s->frame, s->ts, s->mark};
    PyObject *out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLongLong(values[i]);
        if (v == NULL) {
            Py_DECREF(out);             /* the items not set yet are NULL, which the tuple skips */
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, v);
    }
    return out;
}

static PyObject *
ring_lookup(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t psn;
    Slot s;
    if (!slot_of_psn(args, nargs, "lookup(slots, psn)", &psn, &s))
        return NULL;
    if (s.psn != psn)
        Py_RETURN_NONE;
    return entry_tuple(&s, 3);
}

static PyObject *
ring_copy_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t mask, psn_mark;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "copy_of(slots, psn_mark)");
        return NULL;
    }
    if (!as_i64(args[1], &psn_mark))
        return NULL;
    if (psn_mark < 0) {
        PyErr_SetString(PyExc_ValueError, "a PSN and a mark are not negative");
        return NULL;
    }
    Slot *slots = slots_of(args[0], &mask);
    if (slots == NULL)
        return NULL;
    int64_t psn = psn_mark & ((1 << PSN_BITS) - 1), mark = psn_mark >> PSN_BITS;
    Slot s;
    memcpy(&s, (char *)(slots) + (size_t)(psn & mask) * SLOT_SIZE, SLOT_SIZE);
    if (s.psn != psn || s.mark != mark)
        Py_RETURN_NONE;
    return entry_tuple(&s, 2);
}

static PyObject *
ring_grown(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t mask;
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "grown(slots)");
        return NULL;
    }
    Slot *slots = slots_of(args[0], &mask);
    if (slots == NULL)
        return NULL;
    if (mask >= RING - 1) {
        PyErr_SetString(PyExc_ValueError, "the ring is full size");
        return NULL;
    }
    int64_t size = (mask + 1) * 2, nmask = size - 1;
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)size * SLOT_SIZE);
    if (out == NULL)
        return NULL;
    char *dst = PyByteArray_AS_STRING(out);
    const Slot empty = {-1, 0, 0, 0};
    for (int64_t i = 0; i < size; i++)
        memcpy(dst + i * SLOT_SIZE, &empty, SLOT_SIZE);
    /* Entries in distinct slots stay in distinct slots when the mask gains a bit. */
    for (int64_t i = 0; i <= mask; i++) {
        Slot s;
        memcpy(&s, (char *)(slots) + i * SLOT_SIZE, SLOT_SIZE);
        if (s.psn >= 0)
            memcpy(dst + (s.psn & nmask) * SLOT_SIZE, &s, SLOT_SIZE);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"put", (PyCFunction)(void (*)(void))ring_put, METH_FASTCALL, "put(slots, psn_mark, frame, ts) -> bool"},
    {"lookup", (PyCFunction)(void (*)(void))ring_lookup, METH_FASTCALL,
     "lookup(slots, psn) -> (frame, ts, mark) or None"},
    {"copy_of", (PyCFunction)(void (*)(void))ring_copy_of, METH_FASTCALL,
     "copy_of(slots, psn_mark) -> (frame, ts) or None"},
    {"grown", (PyCFunction)(void (*)(void))ring_grown, METH_FASTCALL, "grown(slots) -> bytearray"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ring", "The transport analysis' PSN ring slots, in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__ring(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "RING", RING) < 0 || PyModule_AddIntConstant(m, "SLOT_SIZE", SLOT_SIZE) < 0
            || PyModule_AddIntConstant(m, "PSN_BITS", PSN_BITS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
