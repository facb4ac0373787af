/*
 * analyzer/ana_proc.c - the recorder's process counters summed up
 * (doc/analyzer-output.md §3.6): the report's "Process:" line and the
 * JSON report's "process" object.
 *
 * The counters (doc/trace-format.md §9) are found by name, on the
 * flusher's thread if it has them, else on the first thread that does.
 * A cumulative counter's rate is (last - first) / (last time - first
 * time) over its own samples; a level's figure is the mean of its
 * samples. The counters come from the whole trace (a --since/--until
 * window does not cut them, as the Counters table). A trace without any of
 * them prints and writes nothing here, so its output stays byte for byte
 * what it was.
 */
#include <inttypes.h>
#include <string.h>

#include "analyzer/ana.h"

enum {
	P_USER,
	P_SYSTEM,
	P_VCSW,
	P_IVCSW,
	P_STEAL,
	P_LOAD,
	P_RUNNABLE,
	P_CPUS,
	P_N
};
static const char *const pname[P_N] = {
	[P_USER] = PT_FMT_PROC_CPU_USER,
	[P_SYSTEM] = PT_FMT_PROC_CPU_SYSTEM,
	[P_VCSW] = PT_FMT_PROC_CSW_VOLUNTARY,
	[P_IVCSW] = PT_FMT_PROC_CSW_INVOLUNTARY,
	[P_STEAL] = PT_FMT_PROC_STEAL,
	[P_LOAD] = PT_FMT_PROC_LOAD,
	[P_RUNNABLE] = PT_FMT_PROC_RUNNABLE,
	[P_CPUS] = PT_FMT_PROC_CPUS,
};

/* Each counter of @res by name: the flusher thread's, else the first one. */
static void find(const struct ana_result *res, const struct ana_counter *c[P_N])
{
	for (int k = 0; k < P_N; k++)
		c[k] = NULL;
	for (size_t i = 0; i < res->nthreads; i++) {
		const struct ana_thread *t = &res->threads[i];
		for (size_t j = 0; j < t->ncounters; j++) {
			const char *n = ana_name(res, t->counters[j].id);
			for (int k = 0; k < P_N; k++)
				if (strcmp(n, pname[k]) == 0 && (!c[k] || t->flusher_thread))
					c[k] = &t->counters[j];
		}
	}
}

/* A cumulative counter's growth per ns over its samples; false with fewer
 * than two samples or none apart. */
static bool rate(const struct ana_counter *c, double *per_ns)
{
	if (!c || c->samples < 2 || c->last_ns <= c->first_ns)
		return false;
	*per_ns = (double)(c->last - c->first) / (double)(c->last_ns - c->first_ns);
	return true;
}

void ana_proc_summary(const struct ana_result *res, struct ana_proc *p)
{
	const struct ana_counter *c[P_N];
	memset(p, 0, sizeof(*p));
	find(res, c);
	for (int k = 0; k < P_N; k++)
		p->any |= c[k] != NULL;
	if (!p->any)
		return;
	p->cpus_online = c[P_CPUS] && c[P_CPUS]->last > 0 ? c[P_CPUS]->last : 0;
	double u, s, v, iv, st;
	if (rate(c[P_USER], &u) && rate(c[P_SYSTEM], &s)) {
		p->has_cpu = true;
		p->span_ns = c[P_USER]->last_ns - c[P_USER]->first_ns;
		p->cpu_user_ns = c[P_USER]->last - c[P_USER]->first;
		p->cpu_system_ns = c[P_SYSTEM]->last - c[P_SYSTEM]->first;
		p->cpus_user = u;
		p->cpus_system = s;
		p->cpus_used = u + s;
	}
	if (rate(c[P_VCSW], &v) && rate(c[P_IVCSW], &iv)) {
		p->has_csw = true;
		p->vcsw_per_s = v * 1e9;
		p->ivcsw_per_s = iv * 1e9;
	}
	if (p->cpus_online && rate(c[P_STEAL], &st)) {
		p->has_steal = true;
		p->steal_share = st / (double)p->cpus_online;
	}
	if (c[P_LOAD] && c[P_LOAD]->samples) {
		p->has_load = true;
		p->load_mean = c[P_LOAD]->sum / (double)c[P_LOAD]->samples / 1000.0;
	}
	if (c[P_RUNNABLE] && c[P_RUNNABLE]->samples) {
		p->has_runnable = true;
		p->runnable_mean = c[P_RUNNABLE]->sum / (double)c[P_RUNNABLE]->samples;
	}
}

void ana_proc_text(FILE *out, const struct ana_result *res)
{
	struct ana_proc p;
	ana_proc_summary(res, &p);
	if (!(p.has_cpu || p.has_csw || p.has_steal || p.has_load || p.has_runnable))
		return;
	const char *sep = "";
	fputs("Process:", out);
	if (p.has_cpu) {
		char b[32];
		fprintf(out, " %.2f CPUs", p.cpus_used);
		if (p.cpus_online)
			fprintf(out, " of %" PRId64, p.cpus_online);
		fprintf(out, " (user %.2f, system %.2f) over %s", p.cpus_user, p.cpus_system,
			ana_fmt_dur(b, sizeof(b), (double)p.span_ns));
		sep = ";";
	}
	if (p.has_csw) {
		fprintf(out, "%s context switches %.1f/s voluntary, %.1f/s involuntary", sep, p.vcsw_per_s,
			p.ivcsw_per_s);
		sep = ";";
	}
	if (p.has_steal) {
		fprintf(out, "%s steal %.2f%%", sep, 100.0 * p.steal_share);
		sep = ";";
	}
	if (p.has_load) {
		fprintf(out, "%s load %.2f mean (1 min)", sep, p.load_mean);
		sep = ";";
	}
	if (p.has_runnable)
		fprintf(out, "%s runnable threads %.2f mean", sep, p.runnable_mean);
	fputc('\n', out);
}

static json_t *real_or_null(bool have, double v)
{
	return have ? json_real(v) : json_null();
}

json_t *ana_proc_json(const struct ana_result *res)
{
	struct ana_proc p;
	ana_proc_summary(res, &p);
	if (!p.any)
		return NULL;
	json_t *j = json_object();
	json_object_set_new(j, "span_ns", p.has_cpu ? ana_json_u64(p.span_ns) : json_null());
	json_object_set_new(j, "cpus_online", p.cpus_online ? json_integer(p.cpus_online) : json_null());
	json_object_set_new(j, "cpu_user_ns", p.has_cpu ? json_integer(p.cpu_user_ns) : json_null());
	json_object_set_new(j, "cpu_system_ns", p.has_cpu ? json_integer(p.cpu_system_ns) : json_null());
	json_object_set_new(j, "cpus_used", real_or_null(p.has_cpu, p.cpus_used));
	json_object_set_new(j, "voluntary_switches_per_s", real_or_null(p.has_csw, p.vcsw_per_s));
	json_object_set_new(j, "involuntary_switches_per_s", real_or_null(p.has_csw, p.ivcsw_per_s));
	json_object_set_new(j, "steal_share", real_or_null(p.has_steal, p.steal_share));
	json_object_set_new(j, "load_1min_mean", real_or_null(p.has_load, p.load_mean));
	json_object_set_new(j, "runnable_threads_mean", real_or_null(p.has_runnable, p.runnable_mean));
	return j;
}
