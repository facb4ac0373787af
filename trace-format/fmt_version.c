/*
 * fmt_version.c - pt_version() and pt_version_string(): the release of the
 * libptz that is running, from the generated ptz/version.h compiled in here
 * (a program compares it with the PT_VERSION_* it was built with).
 */
#include "ptz/version.h"

unsigned pt_version(void) { return PT_VERSION_NUMBER; }

const char *pt_version_string(void) { return PT_VERSION_STRING; }
