/*
 * python/ptz_module.c - ptz._ptz, the CPython extension under the ptz
 * package: the PerformanceTiming API of the original proposal over libptz
 * (recording) and the analyzer's session API (in-process statistics).
 *
 * Hot paths, all C: entering and leaving a section (Section.__enter__ and
 * __exit__, METH_NOARGS / METH_FASTCALL), a decorated call (Decorated,
 * vectorcall), and Timing.section() itself (METH_FASTCALL | METH_KEYWORDS,
 * keywords matched by pointer against interned names first). A title is
 * interned into the recorder once per distinct str and cached in a dict
 * keyed by the str object (its hash is cached by CPython), so a section
 * costs a dict lookup, an object and two recorder calls. The GIL is the
 * only lock taken; each Python thread records on its own ring (the
 * recorder's per-thread rings).
 *
 * Errors: misuse of the recording calls that the recorder can count (a
 * stop of a title not open, an end without a begin) is counted in the
 * trace (recorder_errors) and never raised. Bad arguments raise TypeError
 * or ValueError; a trace that cannot be created raises OSError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ptz/recorder.h"
#include "ptz/version.h"
#include "analyzer/ana_api.h"

/* ------------------------------------------------------------ helpers */

/* title (str) -> PyLong id; ids are process-global (recorder.h) */
static PyObject *g_ids;

/* The recorder id of @title (a str), interned once. 0 with an exception
 * set on error. */
static uint32_t title_id(PyObject *title)
{
	if (!PyUnicode_Check(title)) {
		PyErr_Format(PyExc_TypeError, "section title must be str, not %.100s", Py_TYPE(title)->tp_name);
		return 0;
	}
	PyObject *v = PyDict_GetItemWithError(g_ids, title);
	if (v)
		return (uint32_t)PyLong_AsUnsignedLong(v);
	if (PyErr_Occurred())
		return 0;
	Py_ssize_t n;
	const char *s = PyUnicode_AsUTF8AndSize(title, &n);
	if (!s)
		return 0;
	uint32_t id = pt_intern(NULL, s);
	PyObject *o = PyLong_FromUnsignedLong(id);
	if (!o || PyDict_SetItem(g_ids, title, o) < 0) {
		Py_XDECREF(o);
		return 0;
	}
	Py_DECREF(o);
	return id;
}

/* A metric argument: int >= 0, or a finite float >= 0 (truncated; FLOP
 * counts are often computed in floats). None is 0. -1 on error. */
static int metric_arg(PyObject *o, const char *what, uint64_t *out)
{
	*out = 0;
	if (!o || o == Py_None)
		return 0;
	if (PyFloat_Check(o)) {
		double d = PyFloat_AS_DOUBLE(o);
		if (!(d >= 0.0) || !isfinite(d) || d >= 18446744073709551616.0) {
			PyErr_Format(PyExc_ValueError, "%s must be a finite number >= 0 and < 2**64", what);
			return -1;
		}
		*out = (uint64_t)d;
		return 0;
	}
	if (!PyLong_Check(o)) {
		PyObject *i = PyNumber_Index(o);
		if (!i) {
			PyErr_Format(PyExc_TypeError, "%s must be an int or a float, not %.100s", what,
				     Py_TYPE(o)->tp_name);
			return -1;
		}
		int rc = metric_arg(i, what, out);
		Py_DECREF(i);
		return rc;
	}
	int overflow;
	long long s = PyLong_AsLongLongAndOverflow(o, &overflow);
	if (s == -1 && PyErr_Occurred())
		return -1;
	if (s < 0 || overflow < 0) {
		PyErr_Format(PyExc_ValueError, "%s must be >= 0", what);
		return -1;
	}
	if (!overflow) {
		*out = (uint64_t)s;
		return 0;
	}
	unsigned long long v = PyLong_AsUnsignedLongLong(o); /* above 2^63 - 1 */
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "%s must be < 2**64", what);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * Keyword and positional arguments of a METH_FASTCALL | METH_KEYWORDS call
 * into @out (borrowed, NULL when not given), by the interned names
 * @names[0..@n). At most @npos positional. -1 with TypeError set.
 */
static int parse_args(const char *fn, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
		      PyObject **names, PyObject **out, int n, int npos)
{
	for (int i = 0; i < n; i++)
		out[i] = NULL;
	if (nargs > npos) {
		PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional arguments (%zd given)", fn, npos,
			     nargs);
		return -1;
	}
	for (Py_ssize_t i = 0; i < nargs; i++)
		out[i] = args[i];
	if (!kwnames)
		return 0;
	Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
	for (Py_ssize_t k = 0; k < nk; k++) {
		PyObject *key = PyTuple_GET_ITEM(kwnames, k);
		int slot = -1;
		for (int i = 0; i < n && slot < 0; i++)
			if (key == names[i])
				slot = i;
		for (int i = 0; i < n && slot < 0; i++)
			if (PyUnicode_Compare(key, names[i]) == 0)
				slot = i;
		if (slot < 0) {
			PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fn, key);
			return -1;
		}
		if (out[slot]) {
			PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'", fn, key);
			return -1;
		}
		out[slot] = args[nargs + k];
	}
	return 0;
}

/* interned keyword names */
enum {
	K_TITLE, K_READ, K_WRITTEN, K_FLOPS, K_OPTYPE, K_SHAPE, K_GPU, K_STREAM, K_SYNC, K_NAME, K_SIZE_MB,
	K_NBYTES, K_DIRECTION, K_VALUE, K_N, K_SAMPLE, K_COUNT
};
static const char *const k_str[K_COUNT] = {
	"title", "read", "written", "flops", "operation_type", "shape_info", "use_gpu_events", "stream", "sync",
	"name", "size_mb", "nbytes", "direction", "value", "n", "sample",
};
static PyObject *k_obj[K_COUNT];

/* The cudaStream_t of @o: None = 0 (the legacy default stream), an int
 * handle, or an object with .ptr (CuPy) or .cuda_stream (PyTorch). */
static int stream_arg(PyObject *o, void **out)
{
	*out = NULL;
	if (!o || o == Py_None)
		return 0;
	PyObject *h = NULL;
	if (PyLong_Check(o)) {
		h = Py_NewRef(o);
	} else if (PyObject_HasAttrString(o, "ptr")) {
		h = PyObject_GetAttrString(o, "ptr");
	} else if (PyObject_HasAttrString(o, "cuda_stream")) {
		h = PyObject_GetAttrString(o, "cuda_stream");
	} else {
		PyErr_Format(PyExc_TypeError,
			     "stream must be an int handle or have .ptr (CuPy) or .cuda_stream (PyTorch), not %.100s",
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	if (!h)
		return -1;
	if (!PyLong_Check(h)) {
		PyErr_SetString(PyExc_TypeError, "stream handle (.ptr / .cuda_stream) must be an int");
		Py_DECREF(h);
		return -1;
	}
	*out = PyLong_AsVoidPtr(h);
	Py_DECREF(h);
	return PyErr_Occurred() ? -1 : 0;
}

/* The sizes in sequence @seq (a shape) appended to @dims; their product in
 * *@prod. -1 on error. */
static int shape_append(PyObject *seq, int64_t *dims, int *nd, int cap, uint64_t *prod)
{
	PyObject *f = PySequence_Fast(seq, "shape must be a sequence of ints");
	if (!f)
		return -1;
	Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
	*prod = 1;
	for (Py_ssize_t i = 0; i < n; i++) {
		long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
		if (v == -1 && PyErr_Occurred()) {
			Py_DECREF(f);
			return -1;
		}
		if (v < 0) {
			Py_DECREF(f);
			PyErr_SetString(PyExc_ValueError, "shape sizes must be >= 0");
			return -1;
		}
		if (dims) {
			if (*nd >= cap) {
				Py_DECREF(f);
				PyErr_SetString(PyExc_ValueError, "einsum shape_info: too many dimensions (at most 128)");
				return -1;
			}
			dims[(*nd)++] = v;
		}
		*prod = __builtin_mul_overflow(*prod, (uint64_t)v, prod) ? UINT64_MAX : *prod;
	}
	Py_DECREF(f);
	return 0;
}

/*
 * FLOPs of @optype with @shape (section()'s operation_type/shape_info),
 * through libptz's helpers (recorder.h "FLOP counting helpers"):
 *   einsum:        (subscripts, shape_a, shape_b, ...)  -> pt_flops_einsum
 *   matmul:        (m, n, k) or (shape_a, shape_b)      -> pt_flops_matmul
 *                  (leading dimensions of shape_a are batch: they multiply m)
 *   elementwise:   n_elements, a shape, or (shape, ops_per_element)
 *   sparse_matmul: (nnz, n_dense_cols)                  -> pt_flops_spmm
 */
static int optype_flops(PyObject *optype, PyObject *shape, uint64_t *out)
{
	if (!PyUnicode_Check(optype)) {
		PyErr_SetString(PyExc_TypeError, "operation_type must be a str");
		return -1;
	}
	if (!shape || shape == Py_None) {
		PyErr_SetString(PyExc_ValueError, "operation_type needs shape_info");
		return -1;
	}
	const char *op = PyUnicode_AsUTF8(optype);
	if (!op)
		return -1;
	PyObject *f = NULL;
	int rc = -1;
	if (strcmp(op, "elementwise") == 0) {
		uint64_t n = 0;
		unsigned ops = 1;
		if (PyLong_Check(shape)) {
			if (metric_arg(shape, "elementwise shape_info", &n) < 0)
				return -1;
		} else {
			f = PySequence_Fast(shape, "elementwise shape_info: an int, a shape, or (shape, ops_per_element)");
			if (!f)
				return -1;
			if (PySequence_Fast_GET_SIZE(f) == 2 && !PyLong_Check(PySequence_Fast_GET_ITEM(f, 0))) {
				long o = PyLong_AsLong(PySequence_Fast_GET_ITEM(f, 1));
				if ((o == -1 && PyErr_Occurred()) ||
				    shape_append(PySequence_Fast_GET_ITEM(f, 0), NULL, NULL, 0, &n) < 0)
					goto out;
				if (o < 0 || o > 1000000) {
					PyErr_SetString(PyExc_ValueError, "ops_per_element must be in [0, 1e6]");
					goto out;
				}
				ops = (unsigned)o;
			} else if (shape_append(f, NULL, NULL, 0, &n) < 0) {
				goto out;
			}
		}
		*out = pt_flops_elementwise(n, ops);
		rc = 0;
		goto out;
	}
	f = PySequence_Fast(shape, "shape_info must be a sequence");
	if (!f)
		return -1;
	Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
	PyObject **it = PySequence_Fast_ITEMS(f);
	if (strcmp(op, "einsum") == 0) {
		if (n < 2 || !PyUnicode_Check(it[0])) {
			PyErr_SetString(PyExc_ValueError, "einsum shape_info: (subscripts, shape, shape, ...)");
			goto out;
		}
		int64_t dims[128];
		int nd = 0;
		uint64_t prod;
		for (Py_ssize_t i = 1; i < n; i++)
			if (shape_append(it[i], dims, &nd, 128, &prod) < 0)
				goto out;
		const char *spec = PyUnicode_AsUTF8(it[0]);
		if (!spec)
			goto out;
		*out = pt_flops_einsum(spec, dims);
		if (*out == 0 && nd > 0) {
			PyErr_Format(PyExc_ValueError, "einsum shape_info: subscripts '%s' do not match the shapes", spec);
			goto out;
		}
		rc = 0;
	} else if (strcmp(op, "matmul") == 0) {
		uint64_t m, nn, k;
		if (n == 3) {
			if (metric_arg(it[0], "m", &m) < 0 || metric_arg(it[1], "n", &nn) < 0 ||
			    metric_arg(it[2], "k", &k) < 0)
				goto out;
		} else if (n == 2) {
			int64_t a[64], b[64];
			int na = 0, nb = 0;
			uint64_t pa, pb;
			if (shape_append(it[0], a, &na, 64, &pa) < 0 || shape_append(it[1], b, &nb, 64, &pb) < 0)
				goto out;
			if (na < 2 || nb < 2 || a[na - 1] != b[nb - 2]) {
				PyErr_SetString(PyExc_ValueError, "matmul shape_info: shapes (..., m, k) and (..., k, n)");
				goto out;
			}
			k = (uint64_t)a[na - 1];
			nn = (uint64_t)b[nb - 1];
			m = k ? pa / k : 0; /* batch dimensions times m */
		} else {
			PyErr_SetString(PyExc_ValueError, "matmul shape_info: (m, n, k) or (shape_a, shape_b)");
			goto out;
		}
		*out = pt_flops_matmul(m, nn, k);
		rc = 0;
	} else if (strcmp(op, "sparse_matmul") == 0) {
		uint64_t nnz, cols;
		if (n != 2) {
			PyErr_SetString(PyExc_ValueError, "sparse_matmul shape_info: (nnz, n_dense_cols)");
			goto out;
		}
		if (metric_arg(it[0], "nnz", &nnz) < 0 || metric_arg(it[1], "n_dense_cols", &cols) < 0)
			goto out;
		*out = pt_flops_spmm(nnz, cols);
		rc = 0;
	} else {
		PyErr_Format(PyExc_ValueError,
			     "operation_type must be 'einsum', 'matmul', 'elementwise' or 'sparse_matmul', not '%s'", op);
	}
out:
	Py_XDECREF(f);
	return rc;
}

/* ------------------------------------------------------------- Timing */

typedef struct {
	PyObject_HEAD
	pt_recorder *r;        /* NULL: not opened (enabled=False) or closed */
	PyObject *name;        /* str */
	PyObject *path;        /* str: the trace file, after %p expansion */
	int enabled;           /* recording on (pt_set_enabled) */
	int gpu;               /* enable_gpu_timing */
	int closed;
	struct ana_session *ana; /* in-process statistics, opened at the first query */
} TimingObject;

static PyTypeObject Timing_Type, Section_Type, Decorated_Type;

/* The recorder of @t, or NULL: the hot paths call the recorder with it
 * (NULL makes every recorder call a no-op). */
static inline pt_recorder *T_R(TimingObject *t)
{
	return t->r;
}

/* Expands "%p" in @tmpl (the pid), for messages before the recorder is
 * open; once it is, timing_open() takes the path it writes (pt_path(),
 * "%h" expanded too). */
static PyObject *expand_path(PyObject *tmpl)
{
	PyObject *pid = PyUnicode_FromFormat("%ld", (long)getpid());
	if (!pid)
		return NULL;
	PyObject *pat = PyUnicode_FromString("%p");
	PyObject *res = pat ? PyUnicode_Replace(tmpl, pat, pid, -1) : NULL;
	Py_XDECREF(pat);
	Py_DECREF(pid);
	return res;
}

static int timing_open(TimingObject *t)
{
	const char *p = PyUnicode_AsUTF8(t->path);
	if (!p)
		return -1;
	const char *pn = PyUnicode_AsUTF8(t->name);
	if (!pn)
		return -1;
	struct pt_options o = { .process_name = pn };
	pt_recorder *r;
	Py_BEGIN_ALLOW_THREADS
	r = pt_open(p, &o, sizeof(o));
	Py_END_ALLOW_THREADS
	if (!r) {
		if (errno == EBUSY) {
			PyErr_Format(PyExc_OSError,
				     "ptz: a trace is already being recorded in this process (one recorder per "
				     "process): close() it first, or share ptz.get_profiler()");
			return -1;
		}
		PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, t->path);
		return -1;
	}
	t->r = r;
	t->closed = 0;
	pt_set_enabled(r, t->enabled != 0);
	/* the file the recorder writes ("%h" expanded too): the statistics read it */
	char actual[4096];
	if (pt_path(r, actual, sizeof(actual)) > 0) {
		/* with rotation (PTZ_ROTATE_*) it names the first part, run.000001.ptz: the statistics read
		 * every part, through the name the parts share (run.ptz; pt_reader_open_trace()) */
		size_t n = strlen(actual), d = 0;
		while (n > 4 + d && actual[n - 5 - d] >= '0' && actual[n - 5 - d] <= '9')
			d++;
		if (strcmp(actual, p) != 0 && d >= 6 && n > 5 + d && actual[n - 5 - d] == '.' &&
		    strcmp(actual + n - 4, ".ptz") == 0) {
			const size_t pl = strlen(p);
			const int ptz_ext = pl >= 4 && strcmp(p + pl - 4, ".ptz") == 0;
			snprintf(actual + n - 5 - d, sizeof(actual) - (n - 5 - d), "%s", ptz_ext ? ".ptz" : "");
		}
		PyObject *ap = PyUnicode_DecodeFSDefault(actual);
		if (!ap)
			return -1;
		Py_SETREF(t->path, ap);
	}
	return 0;
}

static int Timing_init(TimingObject *t, PyObject *args, PyObject *kw)
{
	static char *kwl[] = { "name", "path", "enable_gpu_timing", "enabled", NULL };
	PyObject *name, *path = Py_None;
	int gpu = 1, enabled = 1;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|Opp:PerformanceTiming", kwl, &name, &path, &gpu, &enabled))
		return -1;
	if (t->r || t->path) {
		PyErr_SetString(PyExc_RuntimeError, "PerformanceTiming is already initialized");
		return -1;
	}
	PyObject *tmpl;
	if (path == Py_None) {
		const char *env = getenv("PTZ_TRACE");
		tmpl = PyUnicode_FromString(env && *env ? env : "ptz-%p.ptz");
	} else {
		tmpl = PyOS_FSPath(path);
		if (tmpl && !PyUnicode_Check(tmpl)) {
			Py_SETREF(tmpl, PyUnicode_DecodeFSDefaultAndSize(PyBytes_AS_STRING(tmpl),
									 PyBytes_GET_SIZE(tmpl)));
		}
	}
	if (!tmpl)
		return -1;
	t->path = expand_path(tmpl);
	Py_DECREF(tmpl);
	if (!t->path)
		return -1;
	t->name = Py_NewRef(name);
	t->gpu = gpu;
	t->enabled = enabled;
	if (enabled && timing_open(t) < 0)
		return -1;
	return 0;
}

static void Timing_dealloc(TimingObject *t)
{
	/* the recorder stays open: it is process-wide and closed by close()
	 * or at exit (ptz/__init__.py) */
	ana_session_close(t->ana);
	Py_XDECREF(t->name);
	Py_XDECREF(t->path);
	Py_TYPE(t)->tp_free((PyObject *)t);
}

PyDoc_STRVAR(close_doc, "close()\n--\n\n"
			"Drain every thread's records, finalize the trace file and stop recording.\n"
			"Later calls on this instance do nothing (statistics still read the file).\n"
			"Raises OSError with the last I/O error met while recording, if any.");
static PyObject *Timing_close(TimingObject *t, PyObject *unused)
{
	pt_recorder *r = t->r;
	if (!r)
		Py_RETURN_NONE;
	t->r = NULL;
	t->closed = 1;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = pt_close(r);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		errno = -rc;
		return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, t->path);
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(enable_doc, "enable()\n--\n\n"
			 "Record from the next call on (opens the trace if the instance was made with\n"
			 "enabled=False). Raises OSError if the trace cannot be created.");
static PyObject *Timing_enable(TimingObject *t, PyObject *unused)
{
	t->enabled = 1;
	if (!t->r && !t->closed) {
		if (timing_open(t) < 0) {
			t->enabled = 0;
			return NULL;
		}
	}
	pt_set_enabled(t->r, true);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(disable_doc, "disable()\n--\n\n"
			  "Stop recording, for every thread: sections begun from now on are skipped\n"
			  "(a few ns each); sections already open still record their end.");
static PyObject *Timing_disable(TimingObject *t, PyObject *unused)
{
	t->enabled = 0;
	pt_set_enabled(t->r, false);
	Py_RETURN_NONE;
}

/* GPU sections opened by start() on this thread, innermost last: stop()
 * ends one with pt_gpu_end() when it is the innermost of them. Deeper
 * than GPU_OPEN_MAX, start() records CPU sections only. */
#define GPU_OPEN_MAX 64
static _Thread_local struct {
	uint32_t id;
	void *stream;
} gpu_open[GPU_OPEN_MAX];
static _Thread_local int gpu_depth;

static void add_metrics(pt_recorder *r, const struct pt_metrics *m)
{
	if (m->read_bytes)
		pt_metric(r, PT_METRIC_READ_BYTES, m->read_bytes);
	if (m->written_bytes)
		pt_metric(r, PT_METRIC_WRITTEN_BYTES, m->written_bytes);
	if (m->flops)
		pt_metric(r, PT_METRIC_FLOPS, m->flops);
}

/* sample=p: *@on 0 for None or absent (an ordinary section), else 1 and
 * *@p the probability (pt_begin_sampled(): p >= 1 always, p <= 0 never;
 * NaN is refused here, a caller's bug). */
static int sample_arg(PyObject *o, int *on, double *p)
{
	*on = 0;
	if (!o || o == Py_None)
		return 0;
	const double v = PyFloat_AsDouble(o);
	if (v == -1.0 && PyErr_Occurred())
		return -1;
	if (v != v) {
		PyErr_SetString(PyExc_ValueError, "sample must be a probability, not NaN");
		return -1;
	}
	*on = 1;
	*p = v;
	return 0;
}

static PyObject *metrics_call(TimingObject *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int stop)
{
	PyObject *kn[7] = { k_obj[K_TITLE], k_obj[K_READ], k_obj[K_WRITTEN], k_obj[K_FLOPS], k_obj[K_GPU],
			    k_obj[K_STREAM], k_obj[K_SAMPLE] };
	PyObject *a[7];
	if (parse_args(stop ? "stop" : "start", args, nargs, kwnames, kn, a, stop ? 4 : 7, stop ? 4 : 6) < 0)
		return NULL;
	int sampled = 0;
	double sample_p = 1.0;
	if (!stop && sample_arg(a[6], &sampled, &sample_p) < 0)
		return NULL;
	if (!a[0]) {
		PyErr_SetString(PyExc_TypeError, "missing the section title");
		return NULL;
	}
	struct pt_metrics m;
	if (metric_arg(a[1], "read", &m.read_bytes) < 0 || metric_arg(a[2], "written", &m.written_bytes) < 0 ||
	    metric_arg(a[3], "flops", &m.flops) < 0)
		return NULL;
	uint32_t id = title_id(a[0]);
	if (!id)
		return NULL;
	pt_recorder *r = T_R(t);
	int gpu = !stop && a[4] && PyObject_IsTrue(a[4]) == 1;
	void *stream = NULL;
	if (gpu && stream_arg(a[5], &stream) < 0)
		return NULL;
	if (gpu && sampled) {
		PyErr_SetString(PyExc_ValueError, "sample= is for CPU sections (not with use_gpu_events)");
		return NULL;
	}
	if (!r)
		Py_RETURN_NONE;
	const char *title = PyUnicode_AsUTF8(a[0]);
	if (!title)
		return NULL;
	if (stop) {
		if (gpu_depth > 0 && gpu_open[gpu_depth - 1].id == id) {
			/* the innermost GPU section start() opened: its GPU half
			 * ends with it (pt_stop() would end the CPU section only) */
			gpu_depth--;
			add_metrics(r, &m);
			pt_gpu_end(r, id, gpu_open[gpu_depth].stream);
		} else {
			pt_stop(r, title, &m, sizeof(m));
		}
	} else if (sampled) {
		pt_begin_sampled(r, id, sample_p); /* not chosen: skipped with all inside, stop() still closes it */
		add_metrics(r, &m);
	} else if (gpu && t->gpu && gpu_depth < GPU_OPEN_MAX) {
		gpu_open[gpu_depth].id = id;
		gpu_open[gpu_depth++].stream = stream;
		pt_gpu_begin(r, id, stream);
		add_metrics(r, &m);
	} else {
		pt_start(r, title, &m, sizeof(m));
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(start_doc,
	     "start(title, read=0, written=0, flops=0, use_gpu_events=False, stream=None, sample=None)\n--\n\n"
	     "Open section `title` on the calling thread. read/written: bytes; flops:\n"
	     "floating-point operations (int, or a float >= 0, truncated), added to the section.\n"
	     "use_gpu_events=True also times the GPU work queued on `stream` (an int\n"
	     "cudaStream_t, or an object with .ptr or .cuda_stream; None = the legacy default\n"
	     "stream) with a CUDA event pair, never synchronizing the host; stop() ends its\n"
	     "GPU half when it is the innermost GPU section start() opened on the thread\n"
	     "(stop them innermost first). sample=p (a float) opens it as a sampled request\n"
	     "(pt_begin_sampled()): recorded with probability p, decided independently per call,\n"
	     "else skipped with everything started inside it on this thread (not a loss);\n"
	     "stop() closes it either way, and ptanalyze reports counts and totals inside\n"
	     "sampled requests as estimates with 95% intervals (doc/analyzer-output.md\n"
	     "section 13). p >= 1: always; p <= 0: never. Not with use_gpu_events.\n"
	     "Raises TypeError/ValueError for bad arguments only (NaN sample included).");
static PyObject *Timing_start(TimingObject *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	return metrics_call(t, args, nargs, kwnames, 0);
}

PyDoc_STRVAR(stop_doc, "stop(title, read=0, written=0, flops=0)\n--\n\n"
		       "Close the innermost open section `title` of the calling thread (and any opened\n"
		       "inside it, each counted as a recorder error), adding the metrics first.\n"
		       "A title that is not open is counted as a recorder error (get_stats()\n"
		       "error_count), never raised.");
static PyObject *Timing_stop(TimingObject *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	return metrics_call(t, args, nargs, kwnames, 1);
}

/* ------------------------------------------------------------ Section */

typedef struct {
	PyObject_HEAD
	TimingObject *t;       /* strong */
	PyObject *title;       /* str, or None: named by the function it decorates */
	uint32_t id;
	uint8_t gpu, sync, sampled;
	double sample_p;       /* sampled: pt_begin_sampled()'s probability */
	void *stream;
	PyObject *stream_obj;  /* for sync: its synchronize() */
	uint64_t read, written, flops;
} SectionObject;

static SectionObject *section_new(TimingObject *t, PyObject *title)
{
	SectionObject *s = PyObject_New(SectionObject, &Section_Type);
	if (!s)
		return NULL;
	s->t = (TimingObject *)Py_NewRef((PyObject *)t);
	s->title = Py_NewRef(title);
	s->id = 0;
	s->gpu = s->sync = s->sampled = 0;
	s->sample_p = 1.0;
	s->stream = NULL;
	s->stream_obj = NULL;
	s->read = s->written = s->flops = 0;
	return s;
}

static void Section_dealloc(SectionObject *s)
{
	Py_XDECREF(s->t);
	Py_XDECREF(s->title);
	Py_XDECREF(s->stream_obj);
	PyObject_Free(s);
}

static int section_sync(SectionObject *s)
{
	PyObject *r = PyObject_CallMethod(s->stream_obj, "synchronize", NULL);
	if (!r)
		return -1;
	Py_DECREF(r);
	return 0;
}

static inline void section_begin(SectionObject *s, pt_recorder *r)
{
	if (s->gpu)
		pt_gpu_begin(r, s->id, s->stream);
	else if (s->sampled)
		pt_begin_sampled(r, s->id, s->sample_p);
	else
		pt_begin(r, s->id);
	const struct pt_metrics m = { .read_bytes = s->read, .written_bytes = s->written, .flops = s->flops };
	add_metrics(r, &m);
}

static inline void section_end(SectionObject *s, pt_recorder *r)
{
	if (s->gpu)
		pt_gpu_end(r, s->id, s->stream);
	else
		pt_end(r, s->id);
}

static PyObject *Section_enter(SectionObject *s, PyObject *unused)
{
	pt_recorder *r = T_R(s->t);
	if (s->sync && r && section_sync(s) < 0)
		return NULL;
	section_begin(s, r);
	return Py_NewRef((PyObject *)s);
}

static PyObject *Section_exit(SectionObject *s, PyObject *const *args, Py_ssize_t nargs)
{
	pt_recorder *r = T_R(s->t);
	int rc = s->sync && r ? section_sync(s) : 0;
	section_end(s, r); /* even when the synchronize failed: nesting stays whole */
	if (rc < 0)
		return NULL;
	Py_RETURN_FALSE;
}

PyDoc_STRVAR(add_memory_doc, "add_memory(read=0, written=0)\n--\n\n"
			     "Add bytes read and written to the innermost section open on the calling thread\n"
			     "(this one, inside its `with` block).");
static PyObject *Section_add_memory(SectionObject *s, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *kn[2] = { k_obj[K_READ], k_obj[K_WRITTEN] }, *a[2];
	uint64_t rd, wr;
	if (parse_args("add_memory", args, nargs, kwnames, kn, a, 2, 2) < 0 || metric_arg(a[0], "read", &rd) < 0 ||
	    metric_arg(a[1], "written", &wr) < 0)
		return NULL;
	pt_recorder *r = T_R(s->t);
	if (rd)
		pt_metric(r, PT_METRIC_READ_BYTES, rd);
	if (wr)
		pt_metric(r, PT_METRIC_WRITTEN_BYTES, wr);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(add_flops_doc, "add_flops(n)\n--\n\n"
			    "Add n floating-point operations to the innermost section open on the calling\n"
			    "thread. ValueError if n < 0.");
static PyObject *Section_add_flops(SectionObject *s, PyObject *n)
{
	uint64_t v;
	if (metric_arg(n, "n", &v) < 0)
		return NULL;
	if (v)
		pt_metric(T_R(s->t), PT_METRIC_FLOPS, v);
	Py_RETURN_NONE;
}

/* ---------------------------------------------------------- Decorated */

typedef struct {
	PyObject_HEAD
	SectionObject *s;     /* strong */
	PyObject *func;       /* strong */
	PyObject *dict;       /* __dict__ (functools attributes), may be NULL */
	vectorcallfunc vectorcall;
} DecoratedObject;

static PyObject *Decorated_vectorcall(DecoratedObject *d, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	SectionObject *s = d->s;
	pt_recorder *r = T_R(s->t);
	if (s->sync && r && section_sync(s) < 0)
		return NULL;
	section_begin(s, r);
	PyObject *res = PyObject_Vectorcall(d->func, args, nargsf, kwnames);
	if (s->sync && r) {
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		if (section_sync(s) < 0)
			Py_CLEAR(res);
		else
			PyErr_Restore(et, ev, tb);
	}
	section_end(s, r);
	return res;
}

static SectionObject *section_named_for(SectionObject *s, PyObject *func);

static PyObject *decorate(SectionObject *s, PyObject *func)
{
	if (!PyCallable_Check(func)) {
		PyErr_Format(PyExc_TypeError, "a section decorates a callable, not %.100s", Py_TYPE(func)->tp_name);
		return NULL;
	}
	SectionObject *use = s;
	if (s->title == Py_None) {
		use = section_named_for(s, func);
		if (!use)
			return NULL;
	} else {
		Py_INCREF(use);
	}
	DecoratedObject *d = PyObject_GC_New(DecoratedObject, &Decorated_Type);
	if (!d) {
		Py_DECREF(use);
		return NULL;
	}
	d->s = use;
	d->func = Py_NewRef(func);
	d->dict = NULL;
	d->vectorcall = (vectorcallfunc)Decorated_vectorcall;
	PyObject_GC_Track(d);
	/* functools.update_wrapper's attributes, so the wrapper looks like func */
	PyObject *ft = PyImport_ImportModule("functools");
	PyObject *w = ft ? PyObject_CallMethod(ft, "update_wrapper", "OO", (PyObject *)d, func) : NULL;
	Py_XDECREF(ft);
	if (!w) {
		Py_DECREF(d);
		return NULL;
	}
	Py_DECREF(w);
	return (PyObject *)d;
}

/* A copy of @s titled by @func's __qualname__ (profile_function() without
 * a name). */
static SectionObject *section_named_for(SectionObject *s, PyObject *func)
{
	PyObject *qn = PyObject_GetAttrString(func, "__qualname__");
	if (!qn) {
		PyErr_Clear();
		qn = PyObject_GetAttrString(func, "__name__");
	}
	if (!qn || !PyUnicode_Check(qn)) {
		Py_XDECREF(qn);
		PyErr_Clear();
		qn = PyObject_Repr(func);
		if (!qn)
			return NULL;
	}
	SectionObject *c = section_new(s->t, qn);
	Py_DECREF(qn);
	if (!c)
		return NULL;
	c->id = title_id(c->title);
	if (!c->id) {
		Py_DECREF(c);
		return NULL;
	}
	c->gpu = s->gpu;
	c->sync = s->sync;
	c->stream = s->stream;
	c->stream_obj = Py_XNewRef(s->stream_obj);
	c->read = s->read;
	c->written = s->written;
	c->flops = s->flops;
	return c;
}

static PyObject *Section_call(SectionObject *s, PyObject *args, PyObject *kw)
{
	if (kw && PyDict_GET_SIZE(kw)) {
		PyErr_SetString(PyExc_TypeError, "a section used as a decorator takes the function only");
		return NULL;
	}
	if (PyTuple_GET_SIZE(args) != 1) {
		PyErr_SetString(PyExc_TypeError, "a section used as a decorator takes exactly one function");
		return NULL;
	}
	return decorate(s, PyTuple_GET_ITEM(args, 0));
}

static PyObject *Decorated_get(PyObject *self, PyObject *obj, PyObject *type)
{
	if (!obj || obj == Py_None)
		return Py_NewRef(self);
	return PyMethod_New(self, obj);
}

static int Decorated_traverse(DecoratedObject *d, visitproc visit, void *arg)
{
	Py_VISIT(d->s);
	Py_VISIT(d->func);
	Py_VISIT(d->dict);
	return 0;
}

static int Decorated_clear(DecoratedObject *d)
{
	Py_CLEAR(d->s);
	Py_CLEAR(d->func);
	Py_CLEAR(d->dict);
	return 0;
}

static void Decorated_dealloc(DecoratedObject *d)
{
	PyObject_GC_UnTrack(d);
	Decorated_clear(d);
	PyObject_GC_Del(d);
}

static PyObject *Decorated_repr(DecoratedObject *d)
{
	return PyUnicode_FromFormat("<ptz section %R around %R>", d->s->title, d->func);
}

/* --------------------------------------------------- Timing: sections */

PyDoc_STRVAR(section_doc,
	     "section(title, read=0, written=0, flops=0, operation_type=None, shape_info=None,\n"
	     "        use_gpu_events=False, stream=None, sync=False, sample=None)\n--\n\n"
	     "A section: a context manager (`with timing.section(\"einsum\", flops=n) as s:`)\n"
	     "whose object has add_memory(read=, written=) and add_flops(n), and a decorator\n"
	     "(`@timing.section(\"step\")`). Reusable and reentrant: `with s:` again records a\n"
	     "new occurrence. read/written: bytes, flops: floating-point operations, added\n"
	     "at each entry. operation_type ('einsum', 'matmul', 'elementwise',\n"
	     "'sparse_matmul') with shape_info computes the FLOPs through libptz's helpers\n"
	     "and adds them to flops:\n"
	     "  einsum: (subscripts, shape_a, shape_b, ...), counted as numpy.einsum_path does\n"
	     "  matmul: (m, n, k) or (shape_a, shape_b); 2*m*n*k\n"
	     "  elementwise: n_elements, a shape, or (shape, ops_per_element)\n"
	     "  sparse_matmul: (nnz, n_dense_cols); 2*nnz*n_dense_cols\n"
	     "use_gpu_events=True times the GPU work queued on `stream` (int cudaStream_t,\n"
	     "or an object with .ptr (CuPy) or .cuda_stream (PyTorch); None = legacy default\n"
	     "stream) with a CUDA event pair and never synchronizes the host, unless\n"
	     "sync=True: then stream.synchronize() is called at entry and exit, which\n"
	     "changes the program's timing (the section then includes the wait); sync needs\n"
	     "a stream object with synchronize(). With enable_gpu_timing=False the section\n"
	     "is recorded on the CPU only.\n"
	     "sample=p makes each entry a sampled request (pt_begin_sampled()): recorded\n"
	     "with probability p, decided independently at each entry, else skipped with\n"
	     "every section entered inside it on this thread (not a loss); ptanalyze then\n"
	     "reports counts and totals inside sampled requests as estimates with 95%\n"
	     "intervals (doc/analyzer-output.md section 13). p >= 1: always; p <= 0:\n"
	     "never. Not with use_gpu_events.\n"
	     "Raises TypeError/ValueError for bad arguments (NaN sample included).");
static PyObject *Timing_section(TimingObject *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *kn[10] = { k_obj[K_TITLE], k_obj[K_READ], k_obj[K_WRITTEN], k_obj[K_FLOPS], k_obj[K_OPTYPE],
			     k_obj[K_SHAPE], k_obj[K_GPU], k_obj[K_STREAM], k_obj[K_SYNC], k_obj[K_SAMPLE] };
	PyObject *a[10];
	if (parse_args("section", args, nargs, kwnames, kn, a, 10, 9) < 0)
		return NULL;
	if (!a[0]) {
		PyErr_SetString(PyExc_TypeError, "section() missing the title");
		return NULL;
	}
	uint32_t id = title_id(a[0]);
	if (!id)
		return NULL;
	SectionObject *s = section_new(t, a[0]);
	if (!s)
		return NULL;
	s->id = id;
	if (nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0) == 1) /* the common case: a title only */
		return (PyObject *)s;
	if (metric_arg(a[1], "read", &s->read) < 0 || metric_arg(a[2], "written", &s->written) < 0 ||
	    metric_arg(a[3], "flops", &s->flops) < 0)
		goto fail;
	if (a[4] && a[4] != Py_None) {
		uint64_t f;
		if (optype_flops(a[4], a[5], &f) < 0)
			goto fail;
		s->flops = s->flops + f < s->flops ? UINT64_MAX : s->flops + f;
	} else if (a[5] && a[5] != Py_None) {
		PyErr_SetString(PyExc_ValueError, "shape_info needs operation_type");
		goto fail;
	}
	int gpu = a[6] ? PyObject_IsTrue(a[6]) : 0;
	int sync = a[8] ? PyObject_IsTrue(a[8]) : 0;
	if (gpu < 0 || sync < 0)
		goto fail;
	int sampled;
	if (sample_arg(a[9], &sampled, &s->sample_p) < 0)
		goto fail;
	s->sampled = (uint8_t)sampled;
	if (gpu && sampled) {
		PyErr_SetString(PyExc_ValueError, "sample= is for CPU sections (not with use_gpu_events)");
		goto fail;
	}
	if (gpu) {
		if (stream_arg(a[7], &s->stream) < 0)
			goto fail;
		s->gpu = t->gpu != 0;
		if (sync) {
			if (!a[7] || !PyObject_HasAttrString(a[7], "synchronize")) {
				PyErr_SetString(PyExc_ValueError,
						"sync=True needs a stream object with synchronize() (CuPy, PyTorch)");
				goto fail;
			}
			s->sync = 1;
			s->stream_obj = Py_NewRef(a[7]);
		}
	} else if (sync) {
		PyErr_SetString(PyExc_ValueError, "sync=True needs use_gpu_events=True");
		goto fail;
	}
	return (PyObject *)s;
fail:
	Py_DECREF(s);
	return NULL;
}

PyDoc_STRVAR(profile_function_doc,
	     "profile_function(name=None)\n--\n\n"
	     "Decorator recording each call of the function as a section titled `name`\n"
	     "(default: the function's __qualname__). Usable bare (@timing.profile_function)\n"
	     "or called (@timing.profile_function(name=\"step\")).");
static PyObject *Timing_profile_function(TimingObject *t, PyObject *const *args, Py_ssize_t nargs,
					 PyObject *kwnames)
{
	PyObject *kn[1] = { k_obj[K_NAME] }, *a[1];
	if (parse_args("profile_function", args, nargs, kwnames, kn, a, 1, 1) < 0)
		return NULL;
	PyObject *name = a[0] ? a[0] : Py_None;
	if (name != Py_None && !PyUnicode_Check(name) && PyCallable_Check(name)) {
		/* @timing.profile_function, bare: the function itself */
		SectionObject *s = section_new(t, Py_None);
		if (!s)
			return NULL;
		PyObject *d = decorate(s, name);
		Py_DECREF(s);
		return d;
	}
	if (name != Py_None && !PyUnicode_Check(name)) {
		PyErr_SetString(PyExc_TypeError, "profile_function(name=) takes a str or None");
		return NULL;
	}
	SectionObject *s = section_new(t, name);
	if (s && name != Py_None && !(s->id = title_id(name)))
		Py_CLEAR(s);
	return (PyObject *)s;
}

PyDoc_STRVAR(record_memory_transfer_doc,
	     "record_memory_transfer(size_mb=None, nbytes=None, direction=\"cpu_to_gpu\")\n--\n\n"
	     "Record a host/device copy, attributed to the innermost open section of the\n"
	     "calling thread (or to the thread if none is open). Give nbytes (bytes) or\n"
	     "size_mb (MiB: 2**20 bytes; a float is allowed). direction: \"cpu_to_gpu\"\n"
	     "(\"h2d\"), \"gpu_to_cpu\" (\"d2h\"), \"gpu_to_gpu\" (\"d2d\"), \"peer\" (\"p2p\").\n"
	     "ValueError for a bad direction or size, TypeError without a size.");
static PyObject *Timing_record_memory_transfer(TimingObject *t, PyObject *const *args, Py_ssize_t nargs,
					       PyObject *kwnames)
{
	PyObject *kn[3] = { k_obj[K_SIZE_MB], k_obj[K_NBYTES], k_obj[K_DIRECTION] }, *a[3];
	if (parse_args("record_memory_transfer", args, nargs, kwnames, kn, a, 3, 3) < 0)
		return NULL;
	uint64_t bytes;
	if (a[1] && a[1] != Py_None) {
		if (metric_arg(a[1], "nbytes", &bytes) < 0)
			return NULL;
	} else if (a[0] && a[0] != Py_None) {
		double mb = PyFloat_AsDouble(a[0]);
		if (mb == -1.0 && PyErr_Occurred())
			return NULL;
		if (!(mb >= 0.0) || !isfinite(mb) || mb * 1048576.0 >= 18446744073709551616.0) {
			PyErr_SetString(PyExc_ValueError, "size_mb must be a finite number >= 0 and below 2**44 (2**64 bytes)");
			return NULL;
		}
		/* round(), not llround(): 2**63 bytes and more do not fit a long long;
		 * below 2**64 round() stays below it (doubles there are integers) */
		bytes = (uint64_t)round(mb * 1048576.0);
	} else {
		PyErr_SetString(PyExc_TypeError, "record_memory_transfer() needs nbytes= or size_mb=");
		return NULL;
	}
	enum pt_direction dir = PT_H2D;
	if (a[2] && a[2] != Py_None) {
		const char *d = PyUnicode_Check(a[2]) ? PyUnicode_AsUTF8(a[2]) : NULL;
		if (!d) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "direction must be a str");
			return NULL;
		}
		if (!strcmp(d, "cpu_to_gpu") || !strcmp(d, "h2d") || !strcmp(d, "host_to_device"))
			dir = PT_H2D;
		else if (!strcmp(d, "gpu_to_cpu") || !strcmp(d, "d2h") || !strcmp(d, "device_to_host"))
			dir = PT_D2H;
		else if (!strcmp(d, "gpu_to_gpu") || !strcmp(d, "d2d") || !strcmp(d, "device_to_device"))
			dir = PT_D2D;
		else if (!strcmp(d, "peer") || !strcmp(d, "p2p") || !strcmp(d, "peer_to_peer"))
			dir = PT_P2P;
		else {
			PyErr_Format(PyExc_ValueError,
				     "direction must be 'cpu_to_gpu', 'gpu_to_cpu', 'gpu_to_gpu' or 'peer', not '%s'", d);
			return NULL;
		}
	}
	pt_transfer(T_R(t), bytes, dir);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(counter_doc, "counter(name, value)\n--\n\n"
			  "Record one timestamped sample of counter `name` (value: int, or a float\n"
			  "truncated toward zero; within the signed 64-bit range). A name ending in\n"
			  "\" (bytes)\" holds bytes: the analyzer shows it per section, as the RSS.\n"
			  "TypeError/OverflowError for a bad value.");
static PyObject *Timing_counter(TimingObject *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *kn[2] = { k_obj[K_NAME], k_obj[K_VALUE] }, *a[2];
	if (parse_args("counter", args, nargs, kwnames, kn, a, 2, 2) < 0)
		return NULL;
	if (!a[0] || !a[1]) {
		PyErr_SetString(PyExc_TypeError, "counter() takes name and value");
		return NULL;
	}
	long long v;
	if (PyFloat_Check(a[1])) {
		double d = PyFloat_AS_DOUBLE(a[1]);
		if (!isfinite(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0) {
			PyErr_SetString(PyExc_OverflowError, "counter value out of the signed 64-bit range");
			return NULL;
		}
		v = (long long)d;
	} else {
		v = PyLong_AsLongLong(a[1]);
		if (v == -1 && PyErr_Occurred())
			return NULL;
	}
	uint32_t id = title_id(a[0]);
	if (!id)
		return NULL;
	pt_counter(T_R(t), id, v);
	Py_RETURN_NONE;
}

/* ------------------------------------------------- Timing: statistics */

PyDoc_STRVAR(flush_doc, "flush()\n--\n\n"
			"Make every record so far readable in the trace file (pt_flush()): blocks up to\n"
			"1 s. Raises OSError on an I/O error met while recording or a timeout.");
static int timing_flush(TimingObject *t)
{
	if (!t->r)
		return 0;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = pt_flush(t->r);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		errno = -rc;
		PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, t->path);
		return -1;
	}
	return 0;
}

static PyObject *Timing_flush(TimingObject *t, PyObject *unused)
{
	if (timing_flush(t) < 0)
		return NULL;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(snapshot_doc, "snapshot(path)\n--\n\n"
			   "Write what the trace holds now, every thread's records so far included, to a\n"
			   "standalone trace at path (str or os.PathLike; created mode 0600, an earlier\n"
			   "file of ours there replaced): with PTZ_MODE=flight the retained window (the\n"
			   "last PTZ_FLIGHT_BYTES of trace), else the whole trace so far (pt_snapshot()).\n"
			   "ptanalyze reads it as a window. Blocks while the recorder's thread writes it\n"
			   "(tens of ms for 64 MiB), the GIL released. Raises OSError when it cannot be\n"
			   "written (the partial file removed; the failure is also recorded in the trace)\n"
			   "or when nothing is being recorded (closed, or enabled=False never enabled).");
static PyObject *Timing_snapshot(TimingObject *t, PyObject *arg)
{
	PyObject *bytes = NULL;
	if (!PyUnicode_FSConverter(arg, &bytes))
		return NULL;
	const char *p = PyBytes_AS_STRING(bytes);
	if (!t->r) {
		Py_DECREF(bytes);
		errno = EBADF;
		return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, t->path);
	}
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = pt_snapshot(t->r, p);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		errno = -rc;
		PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
		Py_DECREF(bytes);
		return NULL;
	}
	Py_DECREF(bytes);
	Py_RETURN_NONE;
}

PyDoc_STRVAR(trigger_doc, "trigger(reason) -> bool\n--\n\n"
			  "Mark that something went wrong (a request over its SLO) and snapshot the last\n"
			  "PTZ_TRIGGER_SECONDS (default 10) in the background (pt_trigger()): the reason\n"
			  "(str) is recorded as an instant \"trigger: <reason>\"; the file is named by\n"
			  "PTZ_SNAPSHOT_PATH (\"%n\" its number; default: the trace's path less .ptz plus\n"
			  ".snapshot-N.ptz). True when a snapshot was scheduled, False when the rate limit\n"
			  "(one per PTZ_TRIGGER_MIN_MS, default 10000) refused it. Returns at once; raises\n"
			  "OSError when nothing is being recorded.");
static PyObject *Timing_trigger(TimingObject *t, PyObject *arg)
{
	const char *reason = PyUnicode_AsUTF8(arg);
	if (!reason)
		return NULL;
	if (!t->r) {
		errno = EBADF;
		return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, t->path);
	}
	int rc = pt_trigger(t->r, reason);
	if (rc < 0) {
		errno = -rc;
		return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, t->path);
	}
	return PyBool_FromLong(rc);
}

/* Flushes and (re)analyzes the trace: the session is current after it.
 * The GIL is released for the flush (a wait on the flusher) but held for
 * the analysis: a session is single-threaded, and another thread's query
 * of the same instance would use it at once. */
static int timing_analyze(TimingObject *t)
{
	if (timing_flush(t) < 0)
		return -1;
	const char *p = PyUnicode_AsUTF8(t->path);
	if (!p)
		return -1;
	char err[512] = "";
	int rc;
	if (t->ana)
		rc = ana_session_update(t->ana, err, sizeof(err));
	else
		rc = ana_session_open(p, NULL, &t->ana, err, sizeof(err));
	if (rc < 0) {
		if (rc > -1024)
			errno = -rc;
		PyErr_Format(PyExc_OSError, "ptz: %s: cannot analyze the trace: %s", p,
			     err[0] ? err : (rc > -1024 ? strerror(-rc) : pt_strerror(rc)));
		return -1;
	}
	return 0;
}

/* @j (a jansson value) as a Python object; the analyzer's u64 figures
 * (ana_json_u64()) as exact ints. */
static PyObject *json_to_py(const json_t *j)
{
	uint64_t u;
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		PyObject *d = PyDict_New();
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)j, k, v) {
			PyObject *o = json_to_py(v);
			if (!o || PyDict_SetItemString(d, k, o) < 0) {
				Py_XDECREF(o);
				Py_DECREF(d);
				return NULL;
			}
			Py_DECREF(o);
		}
		return d;
	}
	case JSON_ARRAY: {
		PyObject *l = PyList_New((Py_ssize_t)json_array_size(j));
		for (size_t i = 0; l && i < json_array_size(j); i++) {
			PyObject *o = json_to_py(json_array_get(j, i));
			if (!o) {
				Py_DECREF(l);
				return NULL;
			}
			PyList_SET_ITEM(l, (Py_ssize_t)i, o);
		}
		return l;
	}
	case JSON_STRING:
		if (ana_json_u64_get(j, &u))
			return PyLong_FromUnsignedLongLong(u);
		return PyUnicode_FromStringAndSize(json_string_value(j), (Py_ssize_t)json_string_length(j));
	case JSON_INTEGER:
		return PyLong_FromLongLong(json_integer_value(j));
	case JSON_REAL:
		return PyFloat_FromDouble(json_real_value(j));
	case JSON_TRUE:
		Py_RETURN_TRUE;
	case JSON_FALSE:
		Py_RETURN_FALSE;
	default:
		Py_RETURN_NONE;
	}
}

/* {key: row} of every row of @view; key = name (flat) or call path. */
static PyObject *rows_dict(TimingObject *t, enum ana_view view)
{
	PyObject *d = PyDict_New();
	if (!d)
		return NULL;
	struct ana_row_iter it;
	struct ana_row_ref row;
	char *buf = NULL;
	size_t cap = 0;
	ana_rows_begin(t->ana, view, &it);
	while (ana_rows_next(&it, &row) == 1) {
		json_t *j = ana_row_json(t->ana, &row);
		const char *key = ana_row_path(t->ana, &row, &buf, &cap);
		PyObject *o = j && key ? json_to_py(j) : NULL;
		json_decref(j);
		if (!o || PyDict_SetItemString(d, key, o) < 0) {
			if (!PyErr_Occurred())
				PyErr_NoMemory();
			Py_XDECREF(o);
			Py_DECREF(d);
			free(buf);
			return NULL;
		}
		Py_DECREF(o);
	}
	free(buf);
	return d;
}

PyDoc_STRVAR(report_doc, "_report()\n--\n\n"
			 "Flush, analyze the trace, and return {'trace': ..., 'sections': {name: row},\n"
			 "'paths': {call path: row}}: the rows of ptanalyze --json (flat and tree).");
static PyObject *Timing_report(TimingObject *t, PyObject *unused)
{
	if (timing_analyze(t) < 0)
		return NULL;
	PyObject *out = PyDict_New(), *o;
	if (!out)
		return NULL;
	json_t *tr = ana_json_trace(ana_session_result(t->ana));
	o = tr ? json_to_py(tr) : PyErr_NoMemory();
	json_decref(tr);
	if (!o || PyDict_SetItemString(out, "trace", o) < 0)
		goto fail;
	Py_DECREF(o);
	o = rows_dict(t, ANA_VIEW_FLAT);
	if (!o || PyDict_SetItemString(out, "sections", o) < 0)
		goto fail;
	Py_DECREF(o);
	o = rows_dict(t, ANA_VIEW_TREE);
	if (!o || PyDict_SetItemString(out, "paths", o) < 0)
		goto fail;
	Py_DECREF(o);
	return out;
fail:
	Py_XDECREF(o);
	Py_DECREF(out);
	return NULL;
}

static PyObject *export_file(TimingObject *t, PyObject *path, int json)
{
	PyObject *p = NULL;
	if (!PyUnicode_FSConverter(path, &p))
		return NULL;
	if (timing_analyze(t) < 0) {
		Py_DECREF(p);
		return NULL;
	}
	const char *fn = PyBytes_AS_STRING(p);
	FILE *f = fopen(fn, "w");
	if (!f) {
		PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
		Py_DECREF(p);
		return NULL;
	}
	struct ana_report_opts ro = { .sort = ANA_SORT_TIME, .thread = -1 };
	int rc = json ? ana_write_json(f, ana_session_result(t->ana), &ro)
		      : ana_write_csv(f, ana_session_result(t->ana), &ro);
	int e = errno;
	if (fclose(f) != 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	Py_DECREF(p);
	if (rc != 0) {
		errno = e ? e : EIO;
		return PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(export_csv_doc, "export_csv(path)\n--\n\n"
			     "Write the statistics as `ptanalyze --csv` does (doc/analyzer-output.md §5):\n"
			     "flushes first. OSError if the file cannot be written or the trace read.");
static PyObject *Timing_export_csv(TimingObject *t, PyObject *path)
{
	return export_file(t, path, 0);
}

PyDoc_STRVAR(export_json_doc, "export_json(path)\n--\n\n"
			      "Write the report as `ptanalyze --json` does (doc/analyzer-output.md §6):\n"
			      "flushes first. OSError if the file cannot be written or the trace read.");
static PyObject *Timing_export_json(TimingObject *t, PyObject *path)
{
	return export_file(t, path, 1);
}

PyDoc_STRVAR(recorder_stats_doc, "_recorder_stats()\n--\n\n"
				 "The recorder's counters (pt_stats()) as a dict; zeros when not recording.");
static PyObject *Timing_recorder_stats(TimingObject *t, PyObject *unused)
{
	struct pt_stats_info s;
	pt_stats(t->r, &s, sizeof(s));
	return Py_BuildValue("{sKsKsKsKsKsKsKsisKsKsKsKsisi}", "records", (unsigned long long)s.records,
			     "lost_records", (unsigned long long)s.lost_records, "lost_sections",
			     (unsigned long long)s.lost_sections, "errors", (unsigned long long)s.errors, "chunks",
			     (unsigned long long)s.chunks, "bytes_written", (unsigned long long)s.bytes_written,
			     "threads", (unsigned long long)s.threads, "last_io_error", (int)s.last_io_error,
			     "gpu_launched", (unsigned long long)s.gpu_launched, "gpu_ranges",
			     (unsigned long long)s.gpu_ranges, "gpu_dropped", (unsigned long long)s.gpu_dropped,
			     "gpu_early_starts", (unsigned long long)s.gpu_early_starts, "gpu_state",
			     (int)s.gpu_state, "gpu_error", (int)s.gpu_error);
}

static PyObject *Timing_get_enabled(TimingObject *t, void *c)
{
	return PyBool_FromLong(t->enabled && t->r);
}

static PyObject *Timing_get_gpu(TimingObject *t, void *c)
{
	return PyBool_FromLong(t->gpu);
}

static PyMethodDef Timing_methods[] = {
	{ "section", (PyCFunction)(void (*)(void))Timing_section, METH_FASTCALL | METH_KEYWORDS, section_doc },
	{ "start", (PyCFunction)(void (*)(void))Timing_start, METH_FASTCALL | METH_KEYWORDS, start_doc },
	{ "stop", (PyCFunction)(void (*)(void))Timing_stop, METH_FASTCALL | METH_KEYWORDS, stop_doc },
	{ "profile_function", (PyCFunction)(void (*)(void))Timing_profile_function, METH_FASTCALL | METH_KEYWORDS,
	  profile_function_doc },
	{ "record_memory_transfer", (PyCFunction)(void (*)(void))Timing_record_memory_transfer,
	  METH_FASTCALL | METH_KEYWORDS, record_memory_transfer_doc },
	{ "counter", (PyCFunction)(void (*)(void))Timing_counter, METH_FASTCALL | METH_KEYWORDS, counter_doc },
	{ "enable", (PyCFunction)Timing_enable, METH_NOARGS, enable_doc },
	{ "disable", (PyCFunction)Timing_disable, METH_NOARGS, disable_doc },
	{ "close", (PyCFunction)Timing_close, METH_NOARGS, close_doc },
	{ "flush", (PyCFunction)Timing_flush, METH_NOARGS, flush_doc },
	{ "snapshot", (PyCFunction)Timing_snapshot, METH_O, snapshot_doc },
	{ "trigger", (PyCFunction)Timing_trigger, METH_O, trigger_doc },
	{ "export_csv", (PyCFunction)Timing_export_csv, METH_O, export_csv_doc },
	{ "export_json", (PyCFunction)Timing_export_json, METH_O, export_json_doc },
	{ "_report", (PyCFunction)Timing_report, METH_NOARGS, report_doc },
	{ "_recorder_stats", (PyCFunction)Timing_recorder_stats, METH_NOARGS, recorder_stats_doc },
	{ NULL }
};

static PyMemberDef Timing_members[] = {
	{ "name", T_OBJECT, offsetof(TimingObject, name), READONLY, "the instance's name (the trace's process name)" },
	{ "path", T_OBJECT, offsetof(TimingObject, path), READONLY, "the trace file" },
	{ NULL }
};

static PyGetSetDef Timing_getset[] = {
	{ "enabled", (getter)Timing_get_enabled, NULL, "True while recording", NULL },
	{ "gpu_timing_enabled", (getter)Timing_get_gpu, NULL, "enable_gpu_timing as given", NULL },
	{ NULL }
};

PyDoc_STRVAR(Timing_doc,
	     "Timing(name, path=None, enable_gpu_timing=True, enabled=True)\n--\n\n"
	     "The recorder of this process (ptz.PerformanceTiming subclasses it).\n"
	     "path: the .ptz trace to create (\"%p\" = pid); None: $PTZ_TRACE, else\n"
	     "ptz-<pid>.ptz in the current directory. An earlier trace of ours there is\n"
	     "replaced. enabled=False: no file is created until enable(); every call is a\n"
	     "no-op until then. One recorder per process: a second open instance raises\n"
	     "OSError (EBUSY); use ptz.get_profiler() to share one.\n"
	     "Raises OSError when the trace cannot be created.");

static PyTypeObject Timing_Type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptz._ptz.Timing",
	.tp_basicsize = sizeof(TimingObject),
	.tp_dealloc = (destructor)Timing_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = Timing_doc,
	.tp_methods = Timing_methods,
	.tp_members = Timing_members,
	.tp_getset = Timing_getset,
	.tp_init = (initproc)Timing_init,
	.tp_new = PyType_GenericNew,
};

static PyMethodDef Section_methods[] = {
	{ "__enter__", (PyCFunction)Section_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)(void (*)(void))Section_exit, METH_FASTCALL, NULL },
	{ "add_memory", (PyCFunction)(void (*)(void))Section_add_memory, METH_FASTCALL | METH_KEYWORDS,
	  add_memory_doc },
	{ "add_flops", (PyCFunction)Section_add_flops, METH_O, add_flops_doc },
	{ NULL }
};

static PyMemberDef Section_members[] = {
	{ "title", T_OBJECT, offsetof(SectionObject, title), READONLY, "the section's title" },
	{ NULL }
};

static PyTypeObject Section_Type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptz._ptz.Section",
	.tp_basicsize = sizeof(SectionObject),
	.tp_dealloc = (destructor)Section_dealloc,
	.tp_call = (ternaryfunc)Section_call,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A section of a Timing (Timing.section()): context manager and decorator.",
	.tp_methods = Section_methods,
	.tp_members = Section_members,
};

static PyMemberDef Decorated_members[] = {
	{ "__dictoffset__", T_PYSSIZET, offsetof(DecoratedObject, dict), READONLY, NULL },
	{ "__vectorcalloffset__", T_PYSSIZET, offsetof(DecoratedObject, vectorcall), READONLY, NULL },
	{ NULL }
};

static PyGetSetDef Decorated_getset[] = {
	{ "__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL },
	{ NULL }
};

static PyTypeObject Decorated_Type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ptz._ptz.Decorated",
	.tp_basicsize = sizeof(DecoratedObject),
	.tp_dealloc = (destructor)Decorated_dealloc,
	.tp_vectorcall_offset = offsetof(DecoratedObject, vectorcall),
	.tp_call = PyVectorcall_Call,
	.tp_repr = (reprfunc)Decorated_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
	.tp_doc = "A function whose every call is a ptz section (profile_function(), @section).",
	.tp_traverse = (traverseproc)Decorated_traverse,
	.tp_clear = (inquiry)Decorated_clear,
	.tp_descr_get = Decorated_get,
	.tp_dictoffset = offsetof(DecoratedObject, dict),
	.tp_members = Decorated_members,
	.tp_getset = Decorated_getset,
};

/* ------------------------------------------------------------- module */

PyDoc_STRVAR(flops_doc, "flops(operation_type, shape_info)\n--\n\n"
			"FLOPs of an operation as section(operation_type=, shape_info=) counts them\n"
			"(libptz's pt_flops_* helpers). ValueError for a bad type or shape.");
static PyObject *mod_flops(PyObject *m, PyObject *args)
{
	PyObject *op, *shape;
	uint64_t f;
	if (!PyArg_ParseTuple(args, "OO:flops", &op, &shape) || optype_flops(op, shape, &f) < 0)
		return NULL;
	return PyLong_FromUnsignedLongLong(f);
}

static PyMethodDef mod_methods[] = {
	{ "flops", mod_flops, METH_VARARGS, flops_doc },
	{ NULL }
};

static struct PyModuleDef ptz_module = {
	PyModuleDef_HEAD_INIT, "ptz._ptz", "ptz recorder and in-process statistics (C part of the ptz package).",
	-1, mod_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ptz(void);
PyMODINIT_FUNC PyInit__ptz(void)
{
	if (PyType_Ready(&Timing_Type) < 0 || PyType_Ready(&Section_Type) < 0 || PyType_Ready(&Decorated_Type) < 0)
		return NULL;
	for (int i = 0; i < K_COUNT; i++)
		if (!k_obj[i] && !(k_obj[i] = PyUnicode_InternFromString(k_str[i])))
			return NULL;
	if (!g_ids && !(g_ids = PyDict_New()))
		return NULL;
	PyObject *m = PyModule_Create(&ptz_module);
	if (!m)
		return NULL;
	if (PyModule_AddObjectRef(m, "Timing", (PyObject *)&Timing_Type) < 0 ||
	    PyModule_AddObjectRef(m, "Section", (PyObject *)&Section_Type) < 0 ||
	    PyModule_AddObjectRef(m, "Decorated", (PyObject *)&Decorated_Type) < 0 ||
	    PyModule_AddStringConstant(m, "version", pt_version_string()) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
