/*
 * cli/cli_top.h - `ptanalyze top TRACE.ptz` (cli_top.c): a live view of a
 * trace still being written.
 */
#ifndef PTZ_CLI_TOP_H
#define PTZ_CLI_TOP_H

struct cli_top_opts {
	double interval_s;   /* between refreshes, seconds (> 0) */
	unsigned iterations; /* frames at most; 0 = until the trace is finalized or a signal */
	int top;             /* names a frame shows; 0 = 20 */
	int plain;           /* never clear the terminal: frames one after another */
};

/* Runs the view on @path until the writer finalizes it, @o->iterations
 * frames, or SIGINT/SIGTERM. Return: the exit code, 0, or 1 when the trace
 * cannot be opened or read, or stdout failed. */
int cli_top(const char *path, const struct cli_top_opts *o);

#endif /* PTZ_CLI_TOP_H */
