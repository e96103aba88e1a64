/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The switch's clocks and its log, used by every other file.  They live here
 * rather than in main.c so that no module depends on the program's entry
 * point: main.c -> port.c/control.c/... -> util.c, never back.
 */
#ifndef CNUAS_UTIL_H
#define CNUAS_UTIL_H

#include <stdint.h>

struct sw;

/*
 * The switch's clock: CLOCK_MONOTONIC plus the advance_time offset, in ns.
 * Only MAC aging and uptime read it, so a test can age entries without
 * waiting.
 */
uint64_t sw_now(const struct sw *sw);
/* CLOCK_MONOTONIC in ns, without the advance_time offset: the SM's timers, idleness. */
uint64_t sw_mono_ns(void);
/* Wall-clock time for capture timestamps, ns since the epoch. */
uint64_t sw_realtime(void);

/* One timestamped line to the --log file (stderr by default), flushed. */
void sw_log(struct sw *sw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
