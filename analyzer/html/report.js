/*
 * analyzer/html/report.js - the page of `ptanalyze ... --html` (embedded at build time, ana_html.c).
 *
 * The page carries its data as JSON in <script type="application/json"> elements written by
 * the analyzer: #ptz-meta (what the page is), #ptz-report (the `--json` report,
 * ptanalyze-report/1, per-thread rows left out), #ptz-suggest (ptanalyze-suggest/1),
 * #ptz-series (memory series over time) or #ptz-compare (ptanalyze-compare/3). Nothing is
 * computed here that the analyzer defines: every figure shown is a field of those documents
 * (doc/analyzer-output.md), only formatted with its unit, summed for a chart, or laid out.
 *
 * Names are data: they reach the page only through textContent, attribute values and Chart.js
 * labels (drawn on a canvas), never through innerHTML, so a section named "<script>" stays
 * text. Charts are Chart.js (Debian libjs-chart.js, inlined before this script).
 *
 * URL fragment: #expand=all opens every row of the tables, #columns=all shows every column group
 * (the browser test reads them all: #expand=all&columns=all).
 */
'use strict';
(function () {
	/* Table rows rendered at a time: a browser lays out 1,000 rows of 40 cells in about a second
	 * (5,000 took 8 s); "show more" adds as many, the filter reaches any row. */
	const LIMIT = 1000;

	function data(id) {
		const e = document.getElementById(id);
		return e ? JSON.parse(e.textContent) : null;
	}
	/* An element; string children become text nodes (never parsed as HTML). */
	function el(tag, attrs, ...kids) {
		const e = document.createElement(tag);
		for (const k in attrs || {}) {
			if (k === 'class')
				e.className = attrs[k];
			else
				e.setAttribute(k, attrs[k]);
		}
		for (const c of kids)
			if (c !== null && c !== undefined)
				e.append(c instanceof Node ? c : String(c));
		return e;
	}
	const num = (v) => (v === null || v === undefined ? NaN : +v);

	/* ---- units: the text report's (ana_fmt_dur, ana_fmt_bytes) ---- */
	const fmt = {
		dur(v) {
			const ns = num(v);
			if (isNaN(ns))
				return '-';
			if (ns < 0)
				return '-' + fmt.dur(-ns);
			if (ns < 1e3)
				return ns.toFixed(0) + ' ns';
			if (ns < 1e6)
				return (ns / 1e3).toFixed(2) + ' us';
			if (ns < 1e9)
				return (ns / 1e6).toFixed(2) + ' ms';
			return (ns / 1e9).toFixed(3) + ' s';
		},
		bytes(v) {
			let a = num(v);
			if (isNaN(a))
				return '-';
			const s = a < 0 ? '-' : '';
			a = Math.abs(a);
			const unit = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
			let u = 0;
			while (a >= 1024 && u < 4) {
				a /= 1024;
				u++;
			}
			return s + (u ? a.toFixed(2) : a.toFixed(0)) + ' ' + unit[u];
		},
		/* a value with 3-4 significant digits, plain (no exponent above 1e-3) */
		sig(v) {
			const x = num(v);
			if (isNaN(x))
				return '-';
			const a = Math.abs(x);
			if (a >= 100)
				return x.toFixed(1);
			if (a >= 1)
				return x.toFixed(3);
			if (a >= 1e-3 || a === 0)
				return x.toFixed(5);
			return x.toExponential(3);
		},
		si(v, unit) {
			let a = num(v);
			if (isNaN(a))
				return '-';
			const p = ['', 'k', 'M', 'G', 'T', 'P', 'E'];
			let i = 0;
			while (Math.abs(a) >= 1000 && i < p.length - 1) {
				a /= 1000;
				i++;
			}
			return (i ? a.toFixed(2) : a.toFixed(0)) + ' ' + p[i] + unit;
		},
		pct(v) {
			const x = num(v);
			return isNaN(x) ? '-' : (x * 100).toFixed(2) + '%';
		},
		spct(v) {
			const x = num(v);
			return isNaN(x) ? '-' : (x > 0 ? '+' : '') + (x * 100).toFixed(2) + '%';
		},
		count(v) {
			const x = num(v);
			return isNaN(x) ? '-' : String(v);
		},
		rate(unit) {
			return (v) => (isNaN(num(v)) ? '-' : fmt.sig(v) + ' ' + unit);
		},
		ratio(v) {
			return isNaN(num(v)) ? '-' : fmt.sig(v) + '\u00d7';
		},
		bool(v) {
			return v ? 'yes' : '';
		},
		/* evidence and other keys: by the unit their name carries */
		byKey(k, v) {
			if (v === null || v === undefined)
				return '-';
			if (typeof v === 'boolean' || typeof v === 'string')
				return String(v);
			if (/_ns$/.test(k))
				return fmt.dur(v);
			if (/_bytes$|^bytes$/.test(k))
				return fmt.bytes(v);
			if (/gbps$|gb_per_s$/.test(k))
				return fmt.sig(v) + ' GB/s';
			if (/gflops$|gflop_per_s$/.test(k))
				return fmt.sig(v) + ' GFLOP/s';
			if (/share$|utilization$|efficiency$|^cv$/.test(k))
				return fmt.pct(v);
			if (/^flops$/.test(k))
				return fmt.si(v, 'FLOP');
			return Number.isInteger(v) ? String(v) : fmt.sig(v);
		},
	};

	/* ---- Chart.js setup: colours from the page's CSS (dark mode), no animation ---- */
	const css = getComputedStyle(document.documentElement);
	const cvar = (n) => css.getPropertyValue(n).trim();
	const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7',
			 '#9c755f', '#bab0ac', '#86bcb6', '#d4a6c8'];
	Chart.defaults.animation = false;
	Chart.defaults.color = cvar('--fg');
	Chart.defaults.borderColor = cvar('--line');
	Chart.defaults.maintainAspectRatio = false;
	Chart.defaults.font.family = 'system-ui, sans-serif';

	function chartBox(title, note, tall) {
		const canvas = el('canvas', { role: 'img', 'aria-label': title });
		const box = el('div', { class: 'chart' + (tall ? ' tall' : '') }, el('h3', null, title),
			       el('div', { class: 'box' }, canvas), note ? el('p', { class: 'note' }, note) : null);
		return { box, canvas };
	}
	/* A long path as a chart label: its last two names, the rest as "…" */
	function shortPath(names) {
		return names.length > 2 ? '\u2026;' + names.slice(-2).join(';') : names.join(';');
	}
	function rowPath(r) {
		return (r.path_elided ? '[' + r.depth + '] \u2026;' : '') + (r.path || [r.name]).join(';');
	}
	/* The unit a chart's axis shows durations up to @maxNs in. */
	function durUnit(maxNs) {
		return maxNs >= 1e9 ? { div: 1e9, unit: 's' } : maxNs >= 1e6 ? { div: 1e6, unit: 'ms' } :
			maxNs >= 1e3 ? { div: 1e3, unit: 'us' } : { div: 1, unit: 'ns' };
	}
	function section(id, title, ...kids) {
		return el('section', { id }, el('h2', null, title), ...kids);
	}
	function card(k, v, warn) {
		return el('div', { class: 'card' + (warn ? ' warn' : '') }, el('div', { class: 'v' }, v),
			  el('div', { class: 'k' }, k));
	}

	/*
	 * The collapsible, sortable, filterable table of a tree of rows. @cols: [{key, label, fmt, get?}];
	 * @nodes: roots [{r, kids, label}] (kids sorted at render time); @rowAttrs(node) -> attributes of
	 * its <tr> (the browser test finds a row's JSON by them).
	 */
	function treeTable(host, cols, roots, opts) {
		const expandAll = /(^|[#&])expand=all($|&)/.test(location.hash);
		let sortKey = opts.sortKey, asc = false, filter = '';
		const open = new Set();
		(function initOpen(list, d) {
			for (const n of list) {
				if (expandAll || d < (opts.openDepth || 1))
					open.add(n);
				initOpen(n.kids, d + 1);
			}
		})(roots, 0);
		const search = el('input', { type: 'search', placeholder: 'filter by name or path', 'aria-label': 'filter' });
		const bAll = el('button', { type: 'button' }, 'expand all');
		const bNone = el('button', { type: 'button' }, 'collapse all');
		const info = el('span', { class: 'note' });
		const bMore = el('button', { type: 'button' }, 'show more rows');
		let limit = LIMIT;
		const groups = [...new Set(cols.map((c) => c.group).filter((g) => g))];
		const allCols = /(^|[#&])columns=all($|&)/.test(location.hash);
		const shown = new Set(groups.filter((g) => allCols || (opts.groups || []).includes(g)));
		const boxes = groups.map((g) => {
			const cb = el('input', { type: 'checkbox' });
			cb.checked = shown.has(g);
			cb.addEventListener('change', () => {
				cb.checked ? shown.add(g) : shown.delete(g);
				render();
			});
			return el('label', null, cb, ' ' + g);
		});
		const table = el('table', { class: 'rows' });
		bMore.addEventListener('click', () => {
			limit += LIMIT;
			render();
		});
		host.append(el('div', { class: 'tools' }, search, bAll, bNone, ...(groups.length ? [el('span', null, 'columns:'), ...boxes] : []), info, bMore),
			    el('div', { class: 'scroll' }, table));
		const val = (n, c) => (c.get ? c.get(n.r) : n.r[c.key]);
		function sorted(list) {
			const c = cols.find((x) => x.key === sortKey);
			if (!c)
				return list;
			const k = (n) => {
				const v = val(n, c);
				return typeof v === 'string' ? v : num(v);
			};
			return list.slice().sort((a, b) => {
				const x = k(a), y = k(b);
				let d;
				if (typeof x === 'string' || typeof y === 'string')
					d = String(x).localeCompare(String(y));
				else
					d = (isNaN(x) ? -Infinity : x) - (isNaN(y) ? -Infinity : y);
				return asc ? d : -d;
			});
		}
		function matches(n) {
			return n.label.toLowerCase().includes(filter) || n.search.toLowerCase().includes(filter);
		}
		/* with a filter: the matching rows and their ancestors, opened */
		function keep(list, out) {
			let any = false;
			for (const n of list) {
				const sub = keep(n.kids, out);
				if (sub || matches(n)) {
					out.add(n);
					any = true;
				}
			}
			return any;
		}
		function render() {
			const vis = cols.filter((c) => !c.group || shown.has(c.group));
			const head = el('tr', null, ...vis.map((c) => {
				const th = el('th', { class: (c.name ? 'name ' : '') + (c.key === sortKey ? 'sorted' + (asc ? ' asc' : '') : ''),
						      'data-key': c.key, title: c.title || c.key }, c.label);
				th.addEventListener('click', () => {
					asc = c.key === sortKey ? !asc : !!c.name;
					sortKey = c.key;
					render();
				});
				return th;
			}));
			const body = el('tbody');
			const kept = filter ? new Set() : null;
			if (kept)
				keep(roots, kept);
			let count = 0, total = 0;
			(function walk(list, depth) {
				for (const n of sorted(list)) {
					if (kept && !kept.has(n))
						continue;
					total++;
					const isOpen = kept ? true : open.has(n);
					if (count < limit) {
						count++;
						const tr = el('tr', opts.rowAttrs(n));
						for (const c of vis) {
							if (c.name) {
								const tog = el('span', { class: 'tog' }, n.kids.length ? (isOpen ? '\u25be' : '\u25b8') : '');
								if (n.kids.length && !kept)
									tog.addEventListener('click', () => {
										open.has(n) ? open.delete(n) : open.add(n);
										render();
									});
								const td = el('td', { class: 'name', title: n.search, 'data-key': c.key }, tog, n.label);
								td.style.paddingLeft = Math.min(depth, 24) * 0.9 + 0.45 + 'rem';
								tr.append(td);
							} else {
								const v = val(n, c);
								const td = el('td', { 'data-key': c.key }, c.fmt(v, n.r));
								if (c.cls)
									td.className = c.cls(v, n.r);
								tr.append(td);
							}
						}
						body.append(tr);
					}
					if (isOpen)
						walk(n.kids, depth + 1);
				}
			})(roots, 0);
			table.replaceChildren(el('thead', null, head), body);
			info.textContent = total > count ? `${count} of ${total} rows shown (filter to narrow)` : `${total} rows shown`;
			bMore.hidden = total <= count;
		}
		search.addEventListener('input', () => {
			filter = search.value.trim().toLowerCase();
			render();
		});
		bAll.addEventListener('click', () => {
			(function all(list) {
				for (const n of list) {
					open.add(n);
					all(n.kids);
				}
			})(roots);
			render();
		});
		bNone.addEventListener('click', () => {
			open.clear();
			render();
		});
		render();
	}

	/* ---- the report page ---- */
	const GPU_DIRS = ['h2d', 'd2h', 'd2d', 'p2p'];
	function reportColumns(rep) {
		const t0 = num(rep.trace.start_ns);
		const C = (key, label, f, group, title) => ({ key, label, fmt: f, group, title });
		const cols = [
			{ key: 'name', label: 'call path', name: true, get: (r) => r.name },
			C('count', 'count', fmt.count), C('total_ns', 'total', fmt.dur), C('self_ns', 'self', fmt.dur),
			C('share', 'share', fmt.pct, null, 'total / sum of thread spans'), C('mean_ns', 'mean', fmt.dur),
			C('std_ns', 'std', fmt.dur), C('min_ns', 'min', fmt.dur), C('max_ns', 'max', fmt.dur),
			C('p50_ns', 'p50', fmt.dur), C('p90_ns', 'p90', fmt.dur), C('p99_ns', 'p99', fmt.dur),
			C('first_ns', 'first', fmt.dur, 'first call'),
			{ key: 'first_start_ns', label: 'first at', fmt: (v) => (isNaN(num(v)) ? '-' : '+' + fmt.dur(num(v) - t0)),
			  group: 'first call', title: 'start of the first occurrence, from the trace start' },
			C('rest_mean_ns', 'rest mean', fmt.dur, 'first call'), C('rest_std_ns', 'rest std', fmt.dur, 'first call'),
			C('first_over_rest', 'first/rest', fmt.ratio, 'first call'),
			C('read_bytes', 'read', fmt.bytes, 'work'), C('written_bytes', 'written', fmt.bytes, 'work'),
			C('flops', 'FLOPs', (v) => fmt.si(v, 'FLOP'), 'work'),
			C('self_read_bytes', 'self read', fmt.bytes, 'work'), C('self_written_bytes', 'self written', fmt.bytes, 'work'),
			C('self_flops', 'self FLOPs', (v) => fmt.si(v, 'FLOP'), 'work'),
			C('gb_per_s', 'GB/s', fmt.rate('GB/s'), 'work'), C('gflop_per_s', 'GFLOP/s', fmt.rate('GFLOP/s'), 'work'),
			C('flop_per_byte', 'FLOP/B', fmt.rate('FLOP/B'), 'work'),
		];
		for (const d of GPU_DIRS)
			cols.push(C(d + '_bytes', d.toUpperCase(), fmt.bytes, 'transfers'));
		for (const d of GPU_DIRS)
			cols.push(C(d + '_gb_per_s', d.toUpperCase() + ' GB/s', fmt.rate('GB/s'), 'transfers'));
		cols.push(C('lossy', 'lossy', fmt.bool));
		if (rep.trace.saturated)
			cols.push(C('saturated', 'saturated', fmt.bool));
		cols.push({ key: 'domain', label: 'domain', fmt: (v) => v || '', group: 'domain', title: 'timing domain ("" = default)' });
		if (rep.gpu) {
			cols.push(C('gpu_count', 'GPU ranges', fmt.count, 'GPU'), C('gpu_total_ns', 'GPU total', fmt.dur, 'GPU'),
				  C('gpu_mean_ns', 'GPU mean', fmt.dur, 'GPU'), C('gpu_min_ns', 'GPU min', fmt.dur, 'GPU'),
				  C('gpu_max_ns', 'GPU max', fmt.dur, 'GPU'), C('gpu_p50_ns', 'GPU p50', fmt.dur, 'GPU'),
				  C('gpu_p99_ns', 'GPU p99', fmt.dur, 'GPU'), C('gpu_incl_count', 'GPU incl ranges', fmt.count, 'GPU'),
				  C('gpu_incl_total_ns', 'GPU incl total', fmt.dur, 'GPU'), C('gpu_over_cpu', 'GPU/CPU', fmt.ratio, 'GPU'),
				  C('gpu_launch_latency_mean_ns', 'latency mean', fmt.dur, 'GPU'),
				  C('gpu_launch_latency_min_ns', 'latency min', fmt.dur, 'GPU'),
				  C('gpu_launch_latency_max_ns', 'latency max', fmt.dur, 'GPU'),
				  C('gpu_early_starts', 'early starts', fmt.count, 'GPU'),
				  C('gpu_gb_per_s', 'GPU GB/s', fmt.rate('GB/s'), 'GPU'), C('gpu_gflop_per_s', 'GPU GFLOP/s', fmt.rate('GFLOP/s'), 'GPU'),
				  C('gpu_self_gb_per_s', 'GPU self GB/s', fmt.rate('GB/s'), 'GPU'),
				  C('gpu_self_gflop_per_s', 'GPU self GFLOP/s', fmt.rate('GFLOP/s'), 'GPU'));
			for (const d of GPU_DIRS)
				cols.push(C('gpu_' + d + '_gb_per_s', 'GPU ' + d.toUpperCase() + ' GB/s', fmt.rate('GB/s'), 'GPU'));
			cols.push(C('occupied_ns', 'occupied', fmt.dur, 'GPU', 'max(self CPU, self GPU capped at busy)'));
			for (const k of ['cpu', 'gpu', 'transfer', 'compute', 'launch'])
				cols.push({ key: 'time.' + k + '_ns', label: 'time ' + k, fmt: fmt.dur, group: 'GPU',
					    get: (r) => (r.time ? r.time[k + '_ns'] : null) });
		}
		if (rep.trace.sampling) { /* sampled requests: the estimates beside the recorded figures (analyzer-output.md 13) */
			const E = (k, label, f, title) => ({ key: 'estimate.' + k, label, fmt: f, group: 'estimate (sampled)', title,
							     get: (r) => (r.estimate ? r.estimate[k] : null) });
			cols.push(E('count', 'est. count', (v) => (v == null ? '' : '~' + Math.round(num(v))), 'Horvitz-Thompson estimate'),
				  E('count_lo', 'count lo', (v) => (v == null ? '' : Math.round(num(v))), '95% interval'),
				  E('count_hi', 'count hi', (v) => (v == null ? '' : Math.round(num(v))), '95% interval'),
				  E('total_ns', 'est. total', (v) => (v == null ? '' : '~' + fmt.dur(v)), 'Horvitz-Thompson estimate'),
				  E('total_lo_ns', 'total lo', (v) => (v == null ? '' : fmt.dur(v)), '95% interval'),
				  E('total_hi_ns', 'total hi', (v) => (v == null ? '' : fmt.dur(v)), '95% interval'),
				  E('sampled_requests', 'sampled requests', (v) => (v == null ? '' : fmt.count(v))));
		}
		if (rep.memory_series && rep.tree.some((r) => 'rss_occurrences' in r)) {
			cols.push(C('rss_occurrences', 'RSS measured', fmt.count, 'memory'),
				  C('rss_begin_bytes', 'RSS begin', fmt.bytes, 'memory'), C('rss_end_bytes', 'RSS end', fmt.bytes, 'memory'),
				  C('rss_delta_bytes', 'RSS change', fmt.bytes, 'memory'),
				  C('rss_delta_total_bytes', 'RSS total change', fmt.bytes, 'memory'),
				  C('rss_peak_bytes', 'RSS peak', fmt.bytes, 'memory'));
		}
		return cols;
	}

	function reportTree(rows) {
		const roots = [], byPath = new Map();
		for (const r of rows) {
			const key = JSON.stringify([r.path_elided || 0, r.path]);
			const n = { r, kids: [], label: r.name, search: rowPath(r) };
			const parent = r.path.length > 1 && !r.path_elided ? byPath.get(JSON.stringify([0, r.path.slice(0, -1)])) : null;
			(parent ? parent.kids : roots).push(n);
			byPath.set(key, n);
		}
		return roots;
	}

	function reportPage(meta) {
		const rep = data('ptz-report'), sug = data('ptz-suggest'), ser = data('ptz-series');
		const tr = rep.trace;
		const main = document.body;
		document.title = 'ptz report: ' + (tr.process || meta.trace);
		main.append(el('header', null, el('h1', null, `${tr.process || '(unnamed process)'} (pid ${tr.pid})`),
			       el('div', { class: 'muted' }, `${meta.trace} \u00b7 host ${tr.host} \u00b7 ${meta.generator}`),
			       el('div', { class: 'muted mono' }, tr.cmdline || ''),
			       el('nav', null, ...[['summary', 'summary'], ['time', 'where the time goes'], ['gpu', 'GPU'],
						  ['counters', 'counters'], ['findings', 'bottlenecks and suggestions'],
						  ['table', 'call tree']].map(([id, t]) => el('a', { href: '#' + id }, t)))));

		/* summary cards */
		const spans = num(tr.thread_span_sum_ns);
		const work = rep.threads.filter((t) => num(t.sections) > 0).length;
		const losses = num(tr.lost_records) + num(tr.lost_sections);
		const errors = num(tr.unmatched_ends) + num(tr.open_at_end) + num(tr.recorder_errors) + tr.problems.length;
		const cards = [
			card('wall span', fmt.dur(tr.wall_span_ns)),
			card('threads (with sections)', `${rep.threads.length} (${work})`),
			card('sections', fmt.count(tr.sections)),
			card('distinct call paths', String(rep.tree.length)),
			card('lost records / sections', `${tr.lost_records} / ${tr.lost_sections}`, losses > 0),
			card('unmatched ends, open at end, recorder errors, damaged regions',
			     `${tr.unmatched_ends}, ${tr.open_at_end}, ${tr.recorder_errors}, ${tr.problems.length}`, errors > 0 || tr.corrupt),
		];
		if (rep.gpu && rep.gpu.devices.length) {
			for (const d of rep.gpu.devices)
				cards.push(card(`GPU ${d.device} busy (instrumented)`, `${fmt.pct(d.instrumented_gpu_busy)} \u00b7 ${fmt.dur(d.busy_ns)}`));
		} else {
			cards.push(card('GPU busy', 'no GPU ranges'));
		}
		main.append(section('summary', 'Summary', el('div', { class: 'cards' }, ...cards),
				    tr.torn_tail ? el('p', { class: 'note' }, 'The trace ends inside a chunk (torn tail): read up to it.') : null,
				    tr.sampling && num(tr.sampling.requests) > 0
					    ? el('p', { class: 'note' }, `Sampled: ${tr.sampling.requests} requests recorded at p = ` +
						 (tr.sampling.p_min === tr.sampling.p_max ? `${tr.sampling.p_min}` : `${tr.sampling.p_min} to ${tr.sampling.p_max}`) +
						 `, standing for ~${Math.round(num(tr.sampling.estimated_requests))}. Counts, totals and charts on this page are ` +
						 'the recorded figures; the call tree\'s "estimate" columns extrapolate them, with 95% intervals.')
					    : null));

		/* where the time goes */
		const tree = rep.tree;
		const charts = el('div', { class: 'charts' });
		main.append(section('time', 'Where the time goes', charts));
		const bySelf = tree.slice().sort((a, b) => num(b.self_ns) - num(a.self_ns));
		const top = bySelf.slice(0, 12);
		const inSections = tree.reduce((s, r) => s + num(r.self_ns), 0);
		const rest = inSections - top.reduce((s, r) => s + num(r.self_ns), 0);
		const outside = spans - inSections;
		const pie = chartBox('Self time by call path (share of the sum of thread spans)',
				     'Self time = inclusive time less the children\u2019s; the slices add up to the sum of thread spans.');
		charts.append(pie.box);
		const pl = top.map((r) => shortPath(r.path)), pv = top.map((r) => num(r.self_ns));
		if (rest > 0) {
			pl.push(`${tree.length - top.length} other paths`);
			pv.push(rest);
		}
		if (outside > 0) {
			pl.push('outside any section');
			pv.push(outside);
		}
		new Chart(pie.canvas, {
			type: 'doughnut',
			data: { labels: pl, datasets: [{ data: pv, backgroundColor: pv.map((_, i) => i >= top.length ? cvar('--ns') : PALETTE[i % PALETTE.length]),
							     borderColor: cvar('--bg') }] },
			options: { plugins: { legend: { position: 'right', labels: { boxWidth: 12 } },
					      tooltip: { callbacks: { label: (c) => `${c.label}: ${fmt.dur(c.raw)} (${fmt.pct(spans ? c.raw / spans : NaN)})`,
								      title: (c) => (c[0].dataIndex < top.length ? rowPath(top[c[0].dataIndex]) : '') } } } },
		});
		const byTotal = tree.slice().sort((a, b) => num(b.total_ns) - num(a.total_ns)).slice(0, 15);
		const bars = chartBox('Top call paths by total (inclusive) time, with their counts', null, true);
		charts.append(bars.box);
		const tu = durUnit(Math.max(0, ...byTotal.map((r) => num(r.total_ns))));
		new Chart(bars.canvas, {
			type: 'bar',
			data: { labels: byTotal.map((r) => shortPath(r.path)),
				datasets: [{ label: `total (${tu.unit})`, data: byTotal.map((r) => num(r.total_ns) / tu.div), backgroundColor: PALETTE[0], xAxisID: 'x' },
					   { label: 'count', data: byTotal.map((r) => num(r.count)), backgroundColor: PALETTE[1], xAxisID: 'x2' }] },
			options: { indexAxis: 'y',
				   scales: { x: { position: 'bottom', title: { display: true, text: `total, ${tu.unit}` } },
					     x2: { position: 'top', type: 'logarithmic', grid: { drawOnChartArea: false }, title: { display: true, text: 'count (log)' } } },
				   plugins: { tooltip: { callbacks: { title: (c) => rowPath(byTotal[c[0].dataIndex]),
									label: (c) => (c.datasetIndex ? `count ${c.raw}` : `total ${fmt.dur(c.raw * tu.div)}`) } } } },
		});

		/* GPU: time breakdown per section */
		const gsec = section('gpu', 'GPU');
		main.append(gsec);
		const grows = tree.filter((r) => r.time && num(r.time.gpu_ns) > 0)
			.sort((a, b) => num(b.occupied_ns) - num(a.occupied_ns)).slice(0, 15);
		if (!grows.length) {
			gsec.append(el('p', { class: 'note' }, rep.gpu ? 'No section launched GPU work.' : 'No GPU records in this trace.'));
		} else {
			const g = chartBox('CPU / GPU / transfer / overhead per section (top 15 by occupied time)',
					   'Each bar is the row\u2019s time breakdown (doc/analyzer-output.md \u00a73.1): CPU time outside launches, ' +
					   'launch overhead (self CPU time of GPU sections), GPU compute and GPU transfer time. CPU and GPU time overlap in wall time.', true);
			gsec.append(el('div', { class: 'charts' }, g.box));
			const gu = durUnit(Math.max(0, ...grows.map((r) => Math.max(num(r.time.cpu_ns), num(r.time.gpu_ns) + num(r.time.cpu_ns)))));
			const part = (f) => grows.map((r) => f(r.time) / gu.div);
			new Chart(g.canvas, {
				type: 'bar',
				data: { labels: grows.map((r) => shortPath(r.path)),
					datasets: [{ label: 'CPU (not launch)', data: part((t) => num(t.cpu_ns) - num(t.launch_ns)), backgroundColor: PALETTE[0] },
						   { label: 'launch overhead', data: part((t) => num(t.launch_ns)), backgroundColor: PALETTE[2] },
						   { label: 'GPU compute', data: part((t) => num(t.compute_ns)), backgroundColor: PALETTE[4] },
						   { label: 'GPU transfer', data: part((t) => num(t.transfer_ns)), backgroundColor: PALETTE[1] }] },
				options: { indexAxis: 'y', scales: { x: { stacked: true, title: { display: true, text: gu.unit } }, y: { stacked: true } },
					   plugins: { tooltip: { callbacks: { title: (c) => rowPath(grows[c[0].dataIndex]),
										label: (c) => `${c.dataset.label}: ${fmt.dur(c.raw * gu.div)}` } } } },
			});
		}

		/* counters over time: the memory series, then the other counters (samples read again by the analyzer) */
		const csec = section('counters', 'Counters over time');
		main.append(csec);
		const series = (ser && ser.series) || [];
		const drawn = (ser && ser.counters) || null;
		const grid = el('div', { class: 'charts' });
		csec.append(grid);
		const line = (title, note, pts, yfmt) => {
			const c = chartBox(title, note);
			grid.append(c.box);
			new Chart(c.canvas, {
				type: 'line',
				data: { datasets: [{ label: title, data: pts, borderColor: PALETTE[0], pointRadius: 0, borderWidth: 1.5, stepped: 'before' }] },
				options: { parsing: false, scales: { x: { type: 'linear', title: { display: true, text: 's from the trace start' } },
								     y: { ticks: { callback: (v) => yfmt(v) } } },
					   plugins: { legend: { display: false },
						      tooltip: { callbacks: { label: (c) => `${yfmt(c.raw.y)} at ${c.raw.x.toFixed(6)} s` } } } },
			});
		};
		const drawnNote = (s) => (s.points < s.samples ? `, drawn as ${s.points} points (the smallest and largest sample of each of 1,000 equal runs)` : '');
		for (const s of series)
			line(s.counter, `${s.samples} samples${drawnNote(s)}; min ${fmt.bytes(s.min_bytes)}, max ${fmt.bytes(s.max_bytes)}.`,
			     s.t_s.map((t, i) => ({ x: t, y: s.v[i] })), fmt.bytes);
		for (const s of drawn || [])
			line(`${s.counter} (thread ${s.thread})`, `${s.samples} samples${drawnNote(s)}; min ${s.min}, max ${s.max}.`,
			     s.t_s.map((t, i) => ({ x: t, y: s.v[i] })), (v) => String(v));
		const counters = [];
		for (const t of rep.threads)
			for (const c of t.counters || [])
				if (c.unit !== 'bytes')
					counters.push([t, c]);
		if (!series.length && !counters.length)
			csec.append(el('p', { class: 'note' }, 'No counters in this trace.'));
		if (counters.length && (!drawn || drawn.length < counters.filter(([, c]) => num(c.samples) > 0).length)) {
			const tb = el('table', { class: 'rows' }, el('thead', null, el('tr', null, ...['thread', 'counter', 'samples', 'last', 'min', 'max'].map((h) => el('th', null, h)))));
			const b = el('tbody');
			for (const [t, c] of counters)
				b.append(el('tr', null, el('td', { class: 'name' }, `${t.index} ${t.name}`), el('td', { class: 'name' }, c.name),
					    el('td', null, c.samples), el('td', null, c.last), el('td', null, c.min), el('td', null, c.max)));
			tb.append(b);
			csec.append(el('p', { class: 'note' }, drawn ? 'More counters than a page draws (64): their figures only (last, smallest, largest value):' :
					'The trace could not be read again for these counters\u2019 samples; their figures (last, smallest, largest value):'),
				    el('div', { class: 'scroll' }, tb));
		}

		/* bottlenecks and suggestions */
		const fsec = section('findings', 'Bottlenecks and suggestions');
		main.append(fsec);
		const occ = (r) => num(r.occupied_ns !== undefined ? r.occupied_ns : r.self_ns);
		const bn = rep.flat.slice().sort((a, b) => occ(b) - occ(a)).slice(0, 5);
		const bt = el('table', { class: 'rows' }, el('thead', null, el('tr', null, ...['#', 'section', 'occupied', 'self CPU', 'share of thread spans', 'count'].map((h) => el('th', null, h)))));
		const bb = el('tbody');
		bn.forEach((r, i) => bb.append(el('tr', null, el('td', null, i + 1), el('td', { class: 'name' }, r.name), el('td', null, fmt.dur(occ(r))),
						   el('td', null, fmt.dur(r.self_ns)), el('td', null, fmt.pct(spans ? num(r.self_ns) / spans : NaN)), el('td', null, r.count))));
		bt.append(bb);
		fsec.append(el('h3', null, 'Top 5 bottlenecks (by name, by occupied time: self CPU time, or self GPU time for a GPU section)'),
			    el('div', { class: 'scroll' }, bt));
		fsec.append(el('h3', null, 'Suggestions, by time at stake'));
		if (!sug) {
			fsec.append(el('p', { class: 'note' }, 'Suggestions could not be computed.'));
		} else {
			if (sug.roofline_needs_peaks)
				fsec.append(el('p', { class: 'note' }, 'Some paths declare FLOPs or bytes: give --peaks FILE (from \'ptanalyze peaks\') for their roofline classes.'));
			const ul = el('ol', { class: 'findings' });
			sug.findings.forEach((f, i) => {
				const where = f.path ? rowPath(f) : f.name !== undefined ? `${f.name}${f.by_name ? ` (by name, ${f.paths} paths)` : ''}` : '';
				const ev = el('table');
				for (const k in f.evidence || {})
					ev.append(el('tr', null, el('td', { class: 'muted' }, k), el('td', null, fmt.byKey(k, f.evidence[k]))));
				const extra = [];
				if (f.host_during_gap)
					extra.push(el('div', { class: 'note' }, 'host during the longest gap: ' +
						      f.host_during_gap.map((h) => `thread ${h.thread} ${h.name} ${fmt.dur(h.ns)}`).join(', ')));
				ul.append(el('li', { class: 'finding ' + f.rule },
					     el('div', { class: 'head' }, el('span', { class: 'rank' }, '#' + (i + 1)), el('span', { class: 'rule' }, f.rule),
						f.class ? el('span', { class: 'muted' }, f.class) : null,
						el('span', null, 'at stake ' + fmt.dur(f.stake_ns) + (spans ? ` (${fmt.pct(num(f.stake_ns) / spans)} of thread spans)` : '')),
						f.counter ? el('span', { class: 'muted' }, f.counter) : null),
					     where ? el('div', { class: 'path mono' }, where) : null, ev, ...extra));
			});
			if (!sug.findings.length)
				ul.append(el('li', { class: 'finding' }, 'No rule fired on this trace.'));
			fsec.append(ul);
			const lo = Object.entries(sug.left_out || {}).filter(([, n]) => n > 0);
			if (lo.length)
				fsec.append(el('p', { class: 'note' }, 'Left out (below their triggers\u2019 impact gate): ' + lo.map(([k, n]) => `${k} ${n}`).join(', ')));
		}

		/* the call tree */
		const tsec = section('table', 'Call tree');
		main.append(tsec);
		const view = el('select', { 'aria-label': 'view' }, el('option', { value: 'tree' }, 'by call path (tree)'), el('option', { value: 'flat' }, 'by name (flat)'));
		const thost = el('div');
		tsec.append(el('div', { class: 'tools' }, el('label', null, 'view ', view),
			       el('span', { class: 'note' }, 'Click a column to sort (siblings within their parent), \u25b8 to open a row. Columns: doc/analyzer-output.md \u00a73.')), thost);
		const cols = reportColumns(rep);
		function showView() {
			thost.replaceChildren();
			const flat = view.value === 'flat';
			const roots = flat ? rep.flat.map((r) => ({ r, kids: [], label: r.name, search: r.name })) : reportTree(tree);
			const c = cols.slice();
			c[0] = Object.assign({}, c[0], { label: flat ? 'name' : 'call path' });
			treeTable(thost, c, roots, {
				sortKey: 'total_ns', openDepth: 1, groups: tr.sampling && !flat ? ['estimate (sampled)'] : [],
				rowAttrs: (n) => ({ 'data-view': flat ? 'flat' : 'tree', 'data-path': JSON.stringify(n.r.path || [n.r.name]),
						    'data-domain': n.r.domain || '' }),
			});
		}
		view.addEventListener('change', showView);
		showView();
		main.append(el('footer', null, `Generated by ${meta.generator} from ${meta.trace}. Definitions: doc/analyzer-output.md. ` +
			       'Charts: Chart.js (MIT), inlined.'));
	}

	/* ---- the compare page ---- */
	const VERDICTS = [['regression', 'regression', '--reg'], ['improvement', 'improvement', '--imp'],
			  ['within_noise', 'within noise', '--noise'], ['not_significant', 'not significant', '--ns'],
			  ['unverified', 'unverified', '--ns'], ['only_base', 'only in base', '--oneside'],
			  ['only_new', 'only in new', '--oneside'], ['inherited', 'inherited', '--ns']];
	/* the call count's verdict (count_verdict): the same keys but these two */
	const COUNT_NAMES = { more_calls: 'more calls', fewer_calls: 'fewer calls' };
	const cname = (k) => COUNT_NAMES[k] || vname(k);
	const vname = (k) => (VERDICTS.find((v) => v[0] === k) || [k, k])[1];

	function comparePage(meta) {
		const cmp = data('ptz-compare');
		const main = document.body;
		document.title = 'ptz compare: ' + meta.base + ' \u2192 ' + meta.new;
		const rows = cmp.rows;
		const paths = [];
		rows.forEach((r, i) => {
			paths[i] = r.parent >= 0 ? paths[r.parent].concat([r.name]) : [r.name];
		});
		main.append(el('header', null, el('h1', null, 'Comparison'),
			       el('div', { class: 'muted' }, `base ${meta.base} (${meta.base_process}) \u2192 new ${meta.new} (${meta.new_process}) \u00b7 ${meta.generator}`),
			       el('div', { class: 'muted' }, `${cmp.method.test}, ${cmp.method.correction} at \u03b1 = ${cmp.method.alpha}, noise \u00b1${fmt.pct(cmp.method.noise)}, ` +
					 `threshold test over ${cmp.method.family} per-call and total tests, intervals at ${fmt.pct(cmp.method.ci_level)} (false-coverage-rate adjusted), ` +
					 `${cmp.method.bootstrap} bootstrap resamples (doc/analyzer-output.md \u00a78)`),
			       el('nav', null, ...[['summary', 'summary'], ['changes', 'regressions and improvements'], ['flame', 'differential flame graph'],
						  ['table', 'all paths']].map(([id, t]) => el('a', { href: '#' + id }, t)))));
		const gm = num(cmp.geomean);
		const sh = cmp.shift || {};
		const cards = [card('whole-run shift', sh.found ? `${fmt.spct(sh.change)}: ${sh.moved} of ${sh.paths} tested paths moved together` : 'none found'),
			       card('geometric mean of median ratios', isNaN(gm) ? '-' : `${fmt.ratio(gm)} (${fmt.spct(gm - 1)})`),
			       card('paths in the mean', String(cmp.geomean_paths)),
			       card('wall span, base \u2192 new', `${fmt.dur(meta.base_wall_span_ns)} \u2192 ${fmt.dur(meta.new_wall_span_ns)}`),
			       card('paths tested', String(cmp.tested))];
		for (const [k, label] of VERDICTS)
			cards.push(card(label, String(cmp.counts[k]), k === 'regression' && cmp.counts[k] > 0));
		/* the total per run (count x duration) beyond the per-call verdicts: a path called 10x as often, new work */
		cards.push(card('regressions of the total', String(cmp.counts.total_regression || 0), cmp.counts.total_regression > 0));
		cards.push(card('improvements of the total', String(cmp.counts.total_improvement || 0)));
		/* the call count's own verdict: a change of the work, outside --fail-on-regression */
		cards.push(card('paths called more / less often', `${cmp.counts.more_calls || 0} / ${cmp.counts.fewer_calls || 0}` +
				(cmp.counts.count_inherited ? ` (${cmp.counts.count_inherited} more as their parent)` : '')));
		cards.push(card('runs a side', `${cmp.method.runs_base} base, ${cmp.method.runs_new} new (unit: ${cmp.method.unit})`));
		main.append(section('summary', 'Summary', el('div', { class: 'cards' }, ...cards)));

		/* regressions and improvements with their intervals */
		const csec = section('changes', 'Regressions and improvements');
		main.append(csec);
		const sigAll = rows.map((r, i) => ({ r, i })).filter((x) => x.r.verdict === 'regression' || x.r.verdict === 'improvement')
			.sort((a, b) => Math.abs(num(b.r.change)) - Math.abs(num(a.r.change))).slice(0, 25);
		/* the chart draws intervals: a --gate-threshold verdict has none (the table lists it) */
		const sig = sigAll.filter((x) => !x.r.threshold_only);
		if (!sigAll.length) {
			csec.append(el('p', { class: 'note' }, 'No path regressed or improved beyond the noise threshold.'));
		} else {
			const c = chartBox(`Change of the median: its ${fmt.pct(cmp.method.ci_level)} interval (largest |change| first)`,
					   `Each bar spans the interval; a regression's lies entirely above +${fmt.pct(cmp.method.noise)} (the noise threshold), ` +
					   `an improvement's entirely below -${fmt.pct(cmp.method.noise)}.`, true);
			csec.append(el('div', { class: 'charts' }, c.box));
			const col = (x) => cvar(x.r.verdict === 'regression' ? '--reg' : '--imp');
			new Chart(c.canvas, {
				type: 'bar',
				data: { labels: sig.map((x) => shortPath(paths[x.i])),
					datasets: [{ label: `change, % (${fmt.pct(cmp.method.ci_level)} interval)`, data: sig.map((x) => [num(x.r.ci_low) * 100, num(x.r.ci_high) * 100]),
						     backgroundColor: sig.map(col), minBarLength: 3 }] },
				options: { indexAxis: 'y',
					   scales: { x: { suggestedMin: Math.min(0, ...sig.map((x) => num(x.r.ci_low) * 110)),
							  suggestedMax: Math.max(0, ...sig.map((x) => num(x.r.ci_high) * 110)),
							  title: { display: true, text: 'change of the median, %' } } },
					   plugins: { legend: { display: false },
						      tooltip: { callbacks: { title: (cs) => paths[sig[cs[0].dataIndex].i].join(';'),
									      label: (cs) => { const r = sig[cs.dataIndex].r;
										      return `${vname(r.verdict)} ${fmt.spct(r.change)} [${fmt.spct(r.ci_low)}, ${fmt.spct(r.ci_high)}], q ${fmt.sig(r.q)}`; } } } } },
			});
			const lt = el('table', { class: 'rows' }, el('thead', null, el('tr', null, ...['verdict', 'change', `${fmt.pct(cmp.method.ci_level)} interval`, 'q', 'median base', 'median new', 'call path'].map((h) => el('th', null, h)))));
			const lb = el('tbody');
			for (const x of sigAll)
				lb.append(el('tr', null, el('td', { class: 'v-' + x.r.verdict }, vname(x.r.verdict)), el('td', null, fmt.spct(x.r.change)),
					     el('td', null, x.r.threshold_only ? 'threshold only (no test)' : `[${fmt.spct(x.r.ci_low)}, ${fmt.spct(x.r.ci_high)}]`),
					     el('td', null, fmt.sig(x.r.q)),
					     el('td', null, fmt.dur(x.r.median_base_ns)), el('td', null, fmt.dur(x.r.median_new_ns)),
					     el('td', { class: 'name' }, paths[x.i].join(';'))));
			lt.append(lb);
			csec.append(el('div', { class: 'scroll' }, lt));
		}

		/* differential flame graph */
		const fsec = section('flame', 'Differential flame graph of self time');
		main.append(fsec);
		flameGraph(fsec, rows, paths);

		/* all paths */
		const tsec = section('table', 'All paths');
		main.append(tsec);
		const roots = [], nodes = [];
		rows.forEach((r, i) => {
			const n = { r, kids: [], label: r.name, search: paths[i].join(';'), i };
			nodes[i] = n;
			(r.parent >= 0 ? nodes[r.parent].kids : roots).push(n);
		});
		const C = (key, label, f, group) => ({ key, label, fmt: f, group });
		const cols = [
			{ key: 'name', label: 'call path', name: true, get: (r) => r.name },
			{ key: 'verdict', label: 'verdict', fmt: (v) => vname(v), get: (r) => r.verdict, cls: (v) => 'v-' + v },
			C('change', 'change', fmt.spct), C('ci_low', 'CI low', fmt.spct), C('ci_high', 'CI high', fmt.spct),
			{ key: 'total_verdict', label: 'total verdict', fmt: (v) => vname(v), get: (r) => r.total_verdict, cls: (v) => 'v-' + v },
			C('total_change', 'total change', fmt.spct), C('total_ci_low', 'total CI low', fmt.spct, 'totals'),
			C('total_ci_high', 'total CI high', fmt.spct, 'totals'),
			{ key: 'count_verdict', label: 'calls verdict', fmt: (v) => cname(v), get: (r) => r.count_verdict, group: 'totals' },
			C('count_change', 'calls change', fmt.spct, 'totals'),
			C('q', 'q', fmt.sig), C('p', 'p', fmt.sig, 'test'), C('u', 'U', fmt.sig, 'test'),
			C('n_base', 'n base', fmt.count), C('n_new', 'n new', fmt.count),
			C('median_base_ns', 'median base', fmt.dur), C('median_new_ns', 'median new', fmt.dur),
			C('self_base_ns', 'self base', fmt.dur), C('self_new_ns', 'self new', fmt.dur),
			C('total_base_ns', 'total base', fmt.dur, 'totals'), C('total_new_ns', 'total new', fmt.dur, 'totals'),
			C('count_base', 'count base', fmt.count, 'totals'), C('count_new', 'count new', fmt.count, 'totals'),
			C('first_base_ns', 'first base', fmt.dur, 'totals'), C('first_new_ns', 'first new', fmt.dur, 'totals'),
			{ key: 'low_confidence', label: 'few samples', fmt: fmt.bool, group: 'test' },
			{ key: 'exact', label: 'exact p', fmt: fmt.bool, group: 'test' },
		];
		treeTable(tsec, cols, roots, { sortKey: 'total_new_ns', openDepth: 2, groups: ['totals'],
					      rowAttrs: (n) => ({ 'data-row': String(n.i), 'data-path': JSON.stringify(paths[n.i]) }) });
		main.append(el('footer', null, `Generated by ${meta.generator}. Charts: Chart.js (MIT), inlined.`));
	}

	/*
	 * Flame graph (frames = call paths, width = inclusive time of the new run, the base run's for a
	 * path only in base, children left to right inside their parent, in row order) drawn as Chart.js
	 * floating horizontal bars, one dataset per verdict so the legend names the colours. Frames
	 * narrower than 0.1% of the whole are left out (as flamegraph.pl's --minwidth), and said.
	 */
	function flameGraph(host, rows, paths) {
		const kids = rows.map(() => []), tops = [];
		rows.forEach((r, i) => (r.parent >= 0 ? kids[r.parent] : tops).push(i));
		const width = (i) => {
			const r = rows[i];
			return r.verdict === 'only_base' ? 0 : num(r.total_new_ns);
		};
		const frames = [];
		let total = 0;
		for (const i of tops)
			total += width(i);
		const min = total / 1000;
		let hidden = 0, maxDepth = 0;
		const stack = [];
		let x = 0;
		for (const i of tops) {
			stack.push([i, x, 0]);
			x += width(i);
		}
		while (stack.length) {
			const [i, x0, d] = stack.pop();
			const w = width(i);
			if (w < min || w <= 0) {
				hidden += w > 0;
				continue;
			}
			frames.push({ i, x0, x1: x0 + w, d });
			maxDepth = Math.max(maxDepth, d);
			let cx = x0;
			for (const k of kids[i]) {
				const kw = Math.min(width(k), x0 + w - cx);
				stack.push([k, cx, d + 1]);
				cx += Math.max(kw, 0);
			}
		}
		const legend = el('div', { class: 'legend' });
		for (const [k, label, v] of VERDICTS) {
			const s = el('span', null, label);
			s.style.setProperty('--c', cvar(v));
			legend.append(s);
		}
		const ob = rows.filter((r) => r.verdict === 'only_base').length;
		const c = chartBox('Frames coloured by verdict, not by raw difference', null, true);
		c.box.querySelector('.box').style.height = Math.max(220, (maxDepth + 1) * 22 + 60) + 'px';
		host.append(legend, el('div', { class: 'charts' }, c.box),
			    el('p', { class: 'note' }, 'Width: inclusive time in the new run (the sum of the self times below a frame). ' +
			       'A significant change colours a frame even when its width barely moved; a large raw difference that the test cannot tell from noise stays grey. ' +
			       `${frames.length} frames drawn` + (hidden ? `, ${hidden} narrower than 0.1% left out` : '') +
			       (ob ? `; ${ob} path(s) only in base have no width here` : '') + '. ' +
			       'The same data for flamegraph.pl: ptanalyze compare --folded-diff FILE (difffolded format).'));
		const levels = [];
		for (let d = maxDepth; d >= 0; d--)
			levels.push(String(d + 1));
		const datasets = VERDICTS.map(([k, label, v]) => ({
			label, grouped: false, barPercentage: 1, categoryPercentage: 0.92, backgroundColor: cvar(v), borderColor: cvar('--bg'), borderWidth: 1,
			borderSkipped: false,
			data: frames.filter((f) => rows[f.i].verdict === k).map((f) => ({ x: [f.x0 / 1e6, f.x1 / 1e6], y: String(f.d + 1), f })),
		})).filter((ds) => ds.data.length);
		const labels = {
			id: 'ptzFrameLabels',
			afterDatasetsDraw(chart) {
				const ctx = chart.ctx;
				ctx.save();
				ctx.font = '11px system-ui, sans-serif';
				ctx.fillStyle = '#000';
				ctx.textBaseline = 'middle';
				chart.data.datasets.forEach((ds, di) => {
					chart.getDatasetMeta(di).data.forEach((bar, k) => {
						const p = bar.getProps(['x', 'y', 'base', 'height'], true);
						const w = Math.abs(p.x - p.base);
						if (w < 30)
							return;
						const name = rows[ds.data[k].f.i].name;
						let s = name;
						while (s.length > 1 && ctx.measureText(s).width > w - 6)
							s = s.slice(0, -2) + '\u2026';
						ctx.fillText(s, Math.min(p.x, p.base) + 3, p.y);
					});
				});
				ctx.restore();
			},
		};
		new Chart(c.canvas, {
			type: 'bar',
			data: { labels: levels, datasets },
			plugins: [labels],
			options: { indexAxis: 'y', parsing: { xAxisKey: 'x', yAxisKey: 'y' },
				   scales: { x: { type: 'linear', min: 0, max: total / 1e6, title: { display: true, text: 'ms (new run, inclusive)' } },
					     y: { title: { display: true, text: 'depth' } } },
				   plugins: { legend: { display: false },
					      tooltip: { callbacks: { title: (cs) => paths[cs[0].raw.f.i].join(';'),
								      label: (cs) => { const r = rows[cs.raw.f.i];
									      return [`${vname(r.verdict)}${isNaN(num(r.change)) ? '' : ' ' + fmt.spct(r.change)}`,
										      `self ${fmt.dur(r.self_base_ns)} \u2192 ${fmt.dur(r.self_new_ns)}`,
										      `total ${fmt.dur(r.total_base_ns)} \u2192 ${fmt.dur(r.total_new_ns)}`]; } } } } },
		});
	}

	const meta = data('ptz-meta');
	try {
		if (meta.kind === 'compare')
			comparePage(meta);
		else
			reportPage(meta);
	} catch (e) {
		document.body.append(el('pre', { id: 'ptz-error' }, 'This page failed to render: ' + e));
		throw e;
	}
})();
