/*
 * The C library's heap kept between a reader's chunks (glibc).
 *
 * A decode reads its capture a mebibyte at a time (rdmaspy/readers): each chunk is a new bytes object
 * and the one before it is freed.  glibc serves a request that size with mmap until one is freed, and
 * afterwards from the heap, whose free top it gives back to the kernel once it passes twice that: the
 * next chunk takes the pages back, each a page fault.  On 600 MB of capture that was 67,000 faults and
 * 0.2 s of system time, a tenth of the run.  Chunks under ``mmap_below`` come from the heap, and up to
 * ``trim_above`` bytes of its free top are kept for the next one: the peak is what it was, the faults go.
 *
 * keep_freed(trim_above, mmap_below) -> bool
 *   True when the C library took both settings; False elsewhere (another C library), where nothing
 *   changes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

static PyObject *
keep_freed(PyObject *self, PyObject *args)
{
    Py_ssize_t trim_above, mmap_below;

    if (!PyArg_ParseTuple(args, "nn:keep_freed", &trim_above, &mmap_below))
        return NULL;
    if (trim_above < 0 || mmap_below < 0 || trim_above > INT_MAX || mmap_below > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "keep_freed: sizes from 0 to 2**31 - 1");
        return NULL;
    }
#if defined(__GLIBC__)
    /* mallopt answers 1 when it took the setting; setting either one ends glibc's own adjustment of both */
    if (mallopt(M_MMAP_THRESHOLD, (int)mmap_below) == 1 && mallopt(M_TRIM_THRESHOLD, (int)trim_above) == 1)
        Py_RETURN_TRUE;
#endif
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"keep_freed", keep_freed, METH_VARARGS,
     "keep_freed(trim_above, mmap_below) -> bool: the heap keeps its free top up to trim_above bytes, and serves "
     "requests under mmap_below bytes itself (glibc); False where the C library has no such settings"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_heap", "The C library's heap kept between chunks.", -1,
                                    methods};

PyMODINIT_FUNC
PyInit__heap(void)
{
    return PyModule_Create(&module);
}
