/* One op vector's forest prediction, walked in C.
 *
 * Why: a decision prices one or two vectors with the forest (a blend keeps it beside the
 * per-operator model). Walked in Python over the node lists, each of the 20 trees' ~10 steps
 * touches a list slot, an int and a float object: on a device that just ran a query that was
 * ~0.1 ms of cold cache misses per vector. Here a step reads one 32-byte node.
 *
 * Forest(child, feature, threshold, value, roots): the flat node table of ForestExec._lists
 *   (node n's children: child[2n] when x[feature] > threshold or NaN, child[2n + 1] when <=;
 *   a leaf has feature -1).
 * Forest.predict_one(x, threads) -> exp(mean over trees of the leaf's value), the features
 *   being log1p(x) and then threads: the same operations in the same order as
 *   ForestExec.predict_one's Python walk, so the same float.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

typedef struct {
    double threshold;
    double value;
    int32_t le;           /* child when x[feature] <= threshold */
    int32_t gt;           /* child otherwise (NaN included) */
    int32_t feature;      /* -1: a leaf */
    int32_t pad;
} Node;

typedef struct {
    PyObject_HEAD
    Node *nodes;
    Py_ssize_t n;
    int32_t *roots;
    Py_ssize_t ntrees;
    int32_t nfeat;        /* features a vector needs: the largest index + 1 */
} Forest;

static int as_list(PyObject *o, const char *what, Py_ssize_t n) {
    if (!PyList_Check(o) || (n >= 0 && PyList_GET_SIZE(o) != n)) {
        PyErr_Format(PyExc_ValueError, "forest: %s must be a list of the node table's length", what);
        return -1;
    }
    return 0;
}

static int Forest_init(Forest *self, PyObject *args, PyObject *kw) {
    (void)kw;
    PyObject *child, *feature, *threshold, *value, *roots;
    if (!PyArg_ParseTuple(args, "OOOOO", &child, &feature, &threshold, &value, &roots)) return -1;
    if (as_list(feature, "feature", -1) < 0) return -1;
    Py_ssize_t n = PyList_GET_SIZE(feature);
    if (n == 0 || n > INT32_MAX / 2 || as_list(child, "child", 2 * n) < 0 || as_list(threshold, "threshold", n) < 0
        || as_list(value, "value", n) < 0 || as_list(roots, "roots", -1) < 0 || PyList_GET_SIZE(roots) == 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "forest: an empty node table");
        return -1;
    }
    PyMem_Free(self->nodes);
    PyMem_Free(self->roots);
    self->nodes = NULL; self->roots = NULL; self->n = self->ntrees = 0;   /* unusable until filled */
    self->nodes = PyMem_Calloc(n, sizeof(Node));
    self->roots = PyMem_Calloc(PyList_GET_SIZE(roots), sizeof(int32_t));
    if (!self->nodes || !self->roots) { PyErr_NoMemory(); return -1; }
    self->nfeat = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Node *d = &self->nodes[i];
        long f = PyLong_AsLong(PyList_GET_ITEM(feature, i));
        long gt = PyLong_AsLong(PyList_GET_ITEM(child, 2 * i));
        long le = PyLong_AsLong(PyList_GET_ITEM(child, 2 * i + 1));
        d->threshold = PyFloat_AsDouble(PyList_GET_ITEM(threshold, i));
        d->value = PyFloat_AsDouble(PyList_GET_ITEM(value, i));
        if (PyErr_Occurred()) return -1;
        if (f < -1 || f > 4096 || gt < 0 || gt >= n || le < 0 || le >= n) {
            PyErr_SetString(PyExc_ValueError, "forest: a node's feature or child is out of range");
            return -1;
        }
        d->feature = (int32_t)f; d->gt = (int32_t)gt; d->le = (int32_t)le;
        if (f + 1 > self->nfeat) self->nfeat = (int32_t)(f + 1);
    }
    Py_ssize_t ntrees = PyList_GET_SIZE(roots);
    for (Py_ssize_t t = 0; t < ntrees; t++) {
        long r = PyLong_AsLong(PyList_GET_ITEM(roots, t));
        if (PyErr_Occurred()) return -1;
        if (r < 0 || r >= n) { PyErr_SetString(PyExc_ValueError, "forest: a root is out of range"); return -1; }
        self->roots[t] = (int32_t)r;
    }
    self->n = n;                          /* only a fully checked table is walked */
    self->ntrees = ntrees;
    return 0;
}

static void Forest_dealloc(Forest *self) {
    PyMem_Free(self->nodes);
    PyMem_Free(self->roots);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define MAX_FEATURES 256

static PyObject *Forest_predict_one(Forest *self, PyObject *args) {
    PyObject *x;
    double threads;
    if (!PyArg_ParseTuple(args, "Od", &x, &threads)) return NULL;
    if (self->ntrees == 0) return PyErr_Format(PyExc_ValueError, "forest: no node table (Forest(...) failed or was not called)");
    PyObject *seq = PySequence_Fast(x, "forest: x must be a sequence of numbers");
    if (!seq) return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    if (k + 1 < self->nfeat || k + 1 > MAX_FEATURES) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "forest: %zd features, the trees read %d", k + 1, (int)self->nfeat);
    }
    double f[MAX_FEATURES];
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < k; i++) {
        double v = PyFloat_AsDouble(items[i]);
        if (v == -1.0 && PyErr_Occurred()) { Py_DECREF(seq); return NULL; }
        f[i] = log1p(v);
    }
    Py_DECREF(seq);
    f[k] = threads;
    double s = 0.0;
    for (Py_ssize_t t = 0; t < self->ntrees; t++) {
        const Node *d = &self->nodes[self->roots[t]];
        for (Py_ssize_t steps = 0; d->feature >= 0; steps++) {
            if (steps >= self->n) return PyErr_Format(PyExc_ValueError, "forest: tree %zd does not end", t);
            d = &self->nodes[f[d->feature] <= d->threshold ? d->le : d->gt];
        }
        s += d->value;
    }
    return PyFloat_FromDouble(exp(s / (double)self->ntrees));
}

static PyMethodDef Forest_methods[] = {
    {"predict_one", (PyCFunction)Forest_predict_one, METH_VARARGS,
     "predict_one(x, threads) -> seconds: exp of the trees' mean leaf value over log1p(x) and threads"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ForestType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "colony.cost._forest.Forest",
    .tp_basicsize = sizeof(Forest),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Forest_init,
    .tp_dealloc = (destructor)Forest_dealloc,
    .tp_methods = Forest_methods,
    .tp_doc = "A fitted forest's node table, walked in C for one vector",
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_forest", NULL, -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__forest(void) {
    if (PyType_Ready(&ForestType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ForestType);
    if (PyModule_AddObject(m, "Forest", (PyObject *)&ForestType) < 0) {
        Py_DECREF(&ForestType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
