// SPDX-License-Identifier: GPL-2.0-or-later
/* Clocks and the log line; see util.h. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "switch.h"
#include "util.h"

/*
 * clock_gettime() cannot fail for the two clocks used here, so its result is
 * not checked.
 */
static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sw_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* advance_time only moves the offset forward, so it is never negative. */
uint64_t sw_now(const struct sw *sw)
{
	return clock_ns(CLOCK_MONOTONIC) + (uint64_t)sw->clock_offset_ns;
}

/*
 * Wall-clock, so capture timestamps line up with other captures and logs; it
 * may step (NTP), which a timestamp can live with and aging could not.
 */
uint64_t sw_realtime(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void sw_log(struct sw *sw, const char *fmt, ...)
{
	struct timespec ts;
	va_list ap;

	/* No log, no output; main() always sets one (stderr by default). */
	if (!sw->log)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(sw->log, "%lld.%06ld cnuas-switch: ", (long long)ts.tv_sec, ts.tv_nsec / 1000);
	va_start(ap, fmt);
	vfprintf(sw->log, fmt, ap);
	va_end(ap);
	fputc('\n', sw->log);
	/* Flushed per line: the harness reads the log of a switch it is about to kill. */
	fflush(sw->log);
}
