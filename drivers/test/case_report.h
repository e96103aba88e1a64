/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * One line per test case, as the matrix rows read them: "name: ok" or
 * "name: FAIL detail"; the program then ends with "PASS" or "FAIL" (by
 * case_failures) and exits 1 when any case failed.
 */
#ifndef CASE_REPORT_H
#define CASE_REPORT_H

#include <stdarg.h>
#include <stdio.h>

static int case_failures;

static void report(const char *name, int ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(const char *name, int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("%s: ok\n", name);
		return;
	}
	case_failures++;
	printf("%s: FAIL ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

#endif /* CASE_REPORT_H */
