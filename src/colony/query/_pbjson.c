/* Substrait protobuf bytes -> the dict that DataFusion's Plan.to_json() + a JSON parser give.
 *
 * Why: decoding a plan through DataFusion (protobuf -> Rust structs -> pretty JSON text of
 * ~10 KB -> Python dicts) was ~0.33 ms of a cold device's ~1 ms decision, a third of the
 * estimation overhead. This walks the wire format once, driven by the message table that
 * scripts/substrait_schema.sh generates from the spec's descriptors (_substrait_schema.py),
 * and builds the proto3-JSON form directly: camelCase names, int64 as strings, enums by name,
 * implicit-presence defaults left out, fields in the order pbjson writes them (the table's
 * order: plain fields as declared, then oneof members; prost writes them by field number).
 *
 * load(messages, enums): the table, copied once into compact C arrays (a cold decision
 *   then touches a few cache lines per field, not a dict, a tuple and its ints).
 * decode(data) -> (dict, marks)
 *   marks: the OR of the flag bits >= 8 of every field seen (split_points asks whether a
 *   window function or a subquery is anywhere in the plan without walking it).
 * Raises ValueError on malformed bytes and NotImplementedError on what it does not map
 * (google.protobuf.Any, a message field twice on the wire, which protobuf merges; a oneof's
 * members replace each other as in protobuf): the caller then decodes
 * through DataFusion, which stays the authority. Bounds are checked on every read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 100   /* prost's recursion limit: deeper plans fail there too */

typedef struct {
    PyObject *name;       /* interned JSON name (a strong reference held by the table) */
    int32_t ref;          /* message or enum index, -1 */
    uint32_t marks;       /* flag bits >= 8 */
    uint16_t pos;         /* JSON position */
    uint8_t type, repeated, presence, group;
} Field;

typedef struct {
    int refused;
    PyObject *full_name;
    int nfields;
    Field *fields;        /* in JSON order */
    int maxnum;
    int16_t *index;       /* field number -> fields[i], -1 where none */
} Msg;

typedef struct {
    int n;
    int32_t *numbers;
    PyObject **names;
} Enum;

static Msg *MSGS = NULL;
static int NMSGS = 0;
static Enum *ENUMS = NULL;
static int NENUMS = 0;

typedef struct {
    unsigned long marks;
} State;

enum { T_DOUBLE = 1, T_FLOAT, T_INT64, T_UINT64, T_INT32, T_FIXED64, T_FIXED32, T_BOOL,
       T_STRING, T_GROUP, T_MESSAGE, T_BYTES, T_UINT32, T_ENUM, T_SFIXED32, T_SFIXED64,
       T_SINT32, T_SINT64 };

static int bad(const char *what) {
    PyErr_Format(PyExc_ValueError, "malformed protobuf: %s", what);
    return -1;
}

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) return bad("truncated varint");
        uint8_t c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) { *out = v; return 0; }
    }
    return bad("varint longer than 10 bytes");
}

/* A length-delimited field's length, checked against what is left. */
static int read_len(const uint8_t **p, const uint8_t *end, uint64_t *n) {
    if (read_varint(p, end, n) < 0) return -1;
    return *n > (uint64_t)(end - *p) ? bad("length past the end") : 0;
}

static int wire_of(int type) {
    switch (type) {
    case T_DOUBLE: case T_FIXED64: case T_SFIXED64: return 1;
    case T_FLOAT: case T_FIXED32: case T_SFIXED32: return 5;
    case T_STRING: case T_BYTES: case T_MESSAGE: return 2;
    case T_GROUP: return 3;
    default: return 0;
    }
}

static PyObject *float_text(double d) {   /* proto3 JSON's names for non-finite numbers */
    if (isnan(d)) return PyUnicode_FromString("NaN");
    return PyUnicode_FromString(d > 0 ? "Infinity" : "-Infinity");
}

static PyObject *base64(const uint8_t *s, Py_ssize_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    Py_ssize_t m = 4 * ((n + 2) / 3);
    PyObject *out = PyUnicode_New(m, 127);
    if (!out) return NULL;
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(out);
    Py_ssize_t i = 0, j = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        o[j++] = tab[v >> 18]; o[j++] = tab[(v >> 12) & 63]; o[j++] = tab[(v >> 6) & 63]; o[j++] = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        o[j++] = tab[v >> 18]; o[j++] = tab[(v >> 12) & 63];
        o[j++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        o[j++] = '=';
    }
    return out;
}

/* One scalar (not a message) read from *p. *is_default says whether proto3 JSON would leave
 * it out of an implicit-presence field. */
static PyObject *scalar(int type, int ref, int wt, const uint8_t **p, const uint8_t *end,
                        int *is_default) {
    uint64_t v = 0;
    if (wt == 0) {
        if (read_varint(p, end, &v) < 0) return NULL;
    } else if (wt == 1) {
        if (end - *p < 8) { bad("truncated fixed64"); return NULL; }
        memcpy(&v, *p, 8); *p += 8;
    } else if (wt == 5) {
        uint32_t w;
        if (end - *p < 4) { bad("truncated fixed32"); return NULL; }
        memcpy(&w, *p, 4); *p += 4; v = w;
    }
    *is_default = v == 0;
    switch (type) {
    case T_DOUBLE: {
        double d; memcpy(&d, &v, 8);
        *is_default = d == 0.0;
        return isfinite(d) ? PyFloat_FromDouble(d) : float_text(d);
    }
    case T_FLOAT: {
        uint32_t w = (uint32_t)v; float f; memcpy(&f, &w, 4);
        *is_default = f == 0.0f;
        if (!isfinite(f)) return float_text(f);
        char buf[32];   /* the shortest digits that read back as this f32, as serde_json writes it */
        for (int prec = 6; prec <= 9; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
            if (strtof(buf, NULL) == f) break;
        }
        return PyFloat_FromDouble(strtod(buf, NULL));
    }
    case T_INT64: case T_SFIXED64: return PyUnicode_FromFormat("%lld", (long long)(int64_t)v);
    case T_SINT64: {
        int64_t s = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
        return PyUnicode_FromFormat("%lld", (long long)s);
    }
    case T_UINT64: case T_FIXED64: return PyUnicode_FromFormat("%llu", (unsigned long long)v);
    case T_INT32: case T_SFIXED32: return PyLong_FromLong((int32_t)(uint32_t)v);
    case T_SINT32: {
        uint32_t w = (uint32_t)v;
        return PyLong_FromLong((int32_t)(w >> 1) ^ -(int32_t)(w & 1));
    }
    case T_UINT32: case T_FIXED32: return PyLong_FromUnsignedLong((uint32_t)v);
    case T_BOOL: return PyBool_FromLong(v != 0);
    case T_ENUM: {
        const Enum *e = &ENUMS[ref];
        int32_t num = (int32_t)(uint32_t)v;
        for (int i = 0; i < e->n; i++)
            if (e->numbers[i] == num) { Py_INCREF(e->names[i]); return e->names[i]; }
        /* pbjson refuses to write an unknown enum value */
        PyErr_Format(PyExc_ValueError, "malformed protobuf: invalid variant %d", num);
        return NULL;
    }
    }
    PyErr_Format(PyExc_NotImplementedError, "protobuf field type %d", type);
    return NULL;
}

static PyObject *message(State *st, int index, const uint8_t *p, const uint8_t *end, int depth);

/* out[name] of a repeated field, created empty the first time (borrowed: the dict holds it). */
static PyObject *list_of(PyObject *out, PyObject *name) {
    PyObject *list = PyDict_GetItemWithError(out, name);
    if (list || PyErr_Occurred()) return list;
    if (!(list = PyList_New(0)) || PyDict_SetItem(out, name, list) < 0) { Py_XDECREF(list); return NULL; }
    Py_DECREF(list);
    return list;
}

/* Sets (or appends to) out[name]; steals v. */
static int put(PyObject *out, PyObject *name, PyObject *v, int repeated) {
    if (!v) return -1;
    PyObject *list = repeated ? list_of(out, name) : NULL;
    int rc = repeated ? (list ? PyList_Append(list, v) : -1) : PyDict_SetItem(out, name, v);
    Py_DECREF(v);
    return rc;
}

/* An implicit-presence field read with its default value: proto3 JSON leaves it out, and as
 * the last value on the wire it replaces an earlier one. */
static void drop(PyObject *out, PyObject *name) {
    if (PyDict_DelItem(out, name) < 0) PyErr_Clear();
}

static PyObject *message(State *st, int index, const uint8_t *p, const uint8_t *end, int depth) {
    if (depth > MAX_DEPTH) { bad("nested deeper than 100 messages"); return NULL; }
    if (index < 0 || index >= NMSGS) { bad("message index"); return NULL; }
    const Msg *m = &MSGS[index];
    if (m->refused) {
        PyErr_Format(PyExc_NotImplementedError, "%U has a JSON form of its own", m->full_name);
        return NULL;
    }
    PyObject *out = PyDict_New();
    if (!out) return NULL;
    long last_pos = -1;
    int reorder = 0;
    PyObject *oneof[32] = {NULL};         /* the member each oneof group holds (borrowed names) */
    while (p < end) {
        uint64_t key;
        if (read_varint(&p, end, &key) < 0) goto fail;
        uint64_t number = key >> 3;
        int wt = (int)(key & 7);
        if (number == 0 || number > 536870911) { bad("field number"); goto fail; }
        int at = number <= (uint64_t)m->maxnum ? m->index[number] : -1;
        if (at < 0) {
            uint64_t n;                   /* a field this spec version lacks: prost drops it too */
            if (wt == 0) { if (read_varint(&p, end, &n) < 0) goto fail; }
            else if (wt == 1) { if (end - p < 8) { bad("truncated"); goto fail; } p += 8; }
            else if (wt == 5) { if (end - p < 4) { bad("truncated"); goto fail; } p += 4; }
            else if (wt == 2) { if (read_len(&p, end, &n) < 0) goto fail; p += n; }
            else { PyErr_SetString(PyExc_NotImplementedError, "protobuf groups"); goto fail; }
            continue;
        }
        const Field *f = &m->fields[at];
        PyObject *name = f->name;
        int type = f->type, ref = f->ref, repeated = f->repeated, presence = f->presence;
        long pos = f->pos, group = f->group;
        reorder |= pos < last_pos;
        last_pos = pos;
        if (group > 0 && group < 32) {    /* another member of the same oneof: the last one wins */
            if (oneof[group] && oneof[group] != name && PyDict_DelItem(out, oneof[group]) < 0) goto fail;
            oneof[group] = name;
        }
        st->marks |= f->marks;
        int want = wire_of(type);
        if (wt == 2 && want != 2 && repeated && want != 3) {          /* packed scalars */
            uint64_t n;
            if (read_len(&p, end, &n) < 0) goto fail;
            const uint8_t *q = p, *qend = p + n;
            PyObject *list = list_of(out, name);
            if (!list) goto fail;
            while (q < qend) {
                int dflt;
                PyObject *v = scalar(type, ref, want, &q, qend, &dflt);
                if (!v || PyList_Append(list, v) < 0) { Py_XDECREF(v); goto fail; }
                Py_DECREF(v);
            }
            p = qend;
            continue;
        }
        if (wt != want) { bad("wire type does not match the field's type"); goto fail; }
        if (type == T_STRING || type == T_BYTES || type == T_MESSAGE) {
            uint64_t n;
            if (read_len(&p, end, &n) < 0) goto fail;
            const uint8_t *q = p;
            p += n;
            PyObject *v;
            if (type == T_MESSAGE) {
                if (!repeated) {
                    int has = PyDict_Contains(out, name);
                    if (has < 0) goto fail;
                    if (has) {                /* protobuf would merge the two */
                        PyErr_SetString(PyExc_NotImplementedError, "a message field twice on the wire");
                        goto fail;
                    }
                }
                v = message(st, ref, q, q + n, depth + 1);
            } else {
                if (n == 0 && !repeated && !presence) { drop(out, name); continue; }
                v = type == T_STRING ? PyUnicode_DecodeUTF8((const char *)q, (Py_ssize_t)n, "strict")
                                     : base64(q, (Py_ssize_t)n);
            }
            if (put(out, name, v, repeated) < 0) goto fail;
            continue;
        }
        int dflt;
        PyObject *v = scalar(type, ref, wt, &p, end, &dflt);
        if (!v) goto fail;
        if (dflt && !repeated && !presence) { Py_DECREF(v); drop(out, name); continue; }
        if (put(out, name, v, repeated) < 0) goto fail;
    }
    if (reorder) {                        /* rebuild in the table's order */
        PyObject *sorted = PyDict_New();
        if (!sorted) goto fail;
        for (int i = 0; i < m->nfields; i++) {
            PyObject *v = PyDict_GetItemWithError(out, m->fields[i].name);
            if ((!v && PyErr_Occurred()) || (v && PyDict_SetItem(sorted, m->fields[i].name, v) < 0)) {
                Py_DECREF(sorted); goto fail;
            }
        }
        Py_DECREF(out);
        out = sorted;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static void drop_table(void) {
    for (int i = 0; i < NMSGS; i++) {
        for (int j = 0; j < MSGS[i].nfields; j++) Py_XDECREF(MSGS[i].fields[j].name);
        Py_XDECREF(MSGS[i].full_name);
        PyMem_Free(MSGS[i].fields);
        PyMem_Free(MSGS[i].index);
    }
    for (int i = 0; i < NENUMS; i++) {
        for (int j = 0; j < ENUMS[i].n; j++) Py_XDECREF(ENUMS[i].names[j]);
        PyMem_Free(ENUMS[i].numbers);
        PyMem_Free(ENUMS[i].names);
    }
    PyMem_Free(MSGS); PyMem_Free(ENUMS);
    MSGS = NULL; ENUMS = NULL; NMSGS = NENUMS = 0;
}

static int table_error(const char *what) {
    PyErr_Format(PyExc_TypeError, "substrait table: %s", what);
    return -1;
}

/* Copies (full name, refused, {number: (name, type, ref, flags, pos, group)}) into MSGS[i]. */
static int load_message(Msg *m, PyObject *spec) {
    PyObject *fields;
    int refused;
    if (!PyTuple_Check(spec) || !PyArg_ParseTuple(spec, "UpO!", &m->full_name, &refused, &PyDict_Type, &fields))
        return table_error("a message is (full name, refused, {number: field})");
    Py_INCREF(m->full_name);
    m->refused = refused;
    Py_ssize_t n = PyDict_GET_SIZE(fields), i = 0;
    PyObject *k, *v;
    m->maxnum = 0;
    while (PyDict_Next(fields, &i, &k, &v)) {
        long num = PyLong_AsLong(k);
        if (num <= 0 || num > 4096) return table_error("field numbers 1..4096");
        if (num > m->maxnum) m->maxnum = (int)num;
    }
    m->fields = PyMem_Calloc(n ? n : 1, sizeof(Field));
    m->index = PyMem_Malloc((m->maxnum + 1) * sizeof(int16_t));
    if (!m->fields || !m->index) { PyErr_NoMemory(); return -1; }
    for (int j = 0; j <= m->maxnum; j++) m->index[j] = -1;
    i = 0;
    int at = 0;
    while (PyDict_Next(fields, &i, &k, &v)) {   /* the dict's order is the JSON order */
        PyObject *name;
        int type, ref, flags, pos, group;
        if (!PyTuple_Check(v) || !PyArg_ParseTuple(v, "Uiiiii", &name, &type, &ref, &flags, &pos, &group))
            return table_error("a field is (name, type, ref, flags, position, oneof)");
        if (type < T_DOUBLE || type > T_SINT64 || pos < 0 || pos > 65535 || group < 0 || group >= 32)
            return table_error("field type, position or oneof out of range");
        if ((type == T_MESSAGE && (ref < 0 || ref >= NMSGS)) || (type == T_ENUM && (ref < 0 || ref >= NENUMS)))
            return table_error("field reference out of range");
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        Field *f = &m->fields[at];
        f->name = name; f->ref = ref; f->marks = (uint32_t)flags & ~7U; f->pos = (uint16_t)pos;
        f->type = (uint8_t)type; f->repeated = flags & 1; f->presence = (flags & 2) != 0; f->group = (uint8_t)group;
        m->index[PyLong_AsLong(k)] = (int16_t)at;
        m->nfields = ++at;
    }
    return 0;
}

static PyObject *load(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *messages, *enums;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &messages, &PyList_Type, &enums)) return NULL;
    drop_table();
    int nm = (int)PyList_GET_SIZE(messages), ne = (int)PyList_GET_SIZE(enums);
    MSGS = PyMem_Calloc(nm ? nm : 1, sizeof(Msg));
    ENUMS = PyMem_Calloc(ne ? ne : 1, sizeof(Enum));
    if (!MSGS || !ENUMS) { drop_table(); return PyErr_NoMemory(); }
    NMSGS = nm; NENUMS = ne;
    for (int i = 0; i < ne; i++) {
        PyObject *spec = PyList_GET_ITEM(enums, i), *full, *names, *k, *v;
        if (!PyTuple_Check(spec) || !PyArg_ParseTuple(spec, "UO!", &full, &PyDict_Type, &names)) {
            table_error("an enum is (full name, {number: name})"); drop_table(); return NULL;
        }
        Enum *e = &ENUMS[i];
        Py_ssize_t n = PyDict_GET_SIZE(names), j = 0;
        e->numbers = PyMem_Calloc(n ? n : 1, sizeof(int32_t));
        e->names = PyMem_Calloc(n ? n : 1, sizeof(PyObject *));
        if (!e->numbers || !e->names) { drop_table(); return PyErr_NoMemory(); }
        while (PyDict_Next(names, &j, &k, &v)) {
            if (!PyUnicode_Check(v)) { table_error("enum names are strings"); drop_table(); return NULL; }
            e->numbers[e->n] = (int32_t)PyLong_AsLong(k);
            Py_INCREF(v);
            e->names[e->n++] = v;
        }
    }
    for (int i = 0; i < nm; i++)
        if (load_message(&MSGS[i], PyList_GET_ITEM(messages, i)) < 0) { drop_table(); return NULL; }
    Py_RETURN_NONE;
}

static PyObject *decode(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    if (!NMSGS) { PyBuffer_Release(&buf); PyErr_SetString(PyExc_RuntimeError, "load() the table first"); return NULL; }
    State st = {0};
    const uint8_t *p = (const uint8_t *)buf.buf;
    PyObject *d = message(&st, 0, p, p + buf.len, 0);
    PyBuffer_Release(&buf);
    if (!d) return NULL;
    return Py_BuildValue("(Nk)", d, st.marks);
}

static PyMethodDef methods[] = {
    {"load", load, METH_VARARGS, "load(messages, enums): the message table decode() walks"},
    {"decode", decode, METH_VARARGS, "decode(data) -> (dict, marks): Substrait protobuf bytes as proto3 JSON values"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pbjson", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pbjson(void) { return PyModule_Create(&module); }
