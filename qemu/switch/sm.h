/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The subnet manager and SA of InfiniBand mode (docs/switch.md, "Subnet
 * manager and SA").  The rest of the switch talks to it through these calls:
 *  - frames addressed to the switch itself (DLID 0xFFFF, or a unicast LID whose
 *    LFT entry is port 0) that passed the LRH and VCRC checks go to
 *    sm_receive(); it takes every one (unusable ones count as mads.bad);
 *  - sm_port_change() reports a device connecting to / leaving a port;
 *  - sm_timer() runs when the SM's timerfd (EV_TIMER) fires;
 *  - the SM sends with port_output_now() and programs routes through sw->lft
 *    and mcast_set(), the same state the control socket edits.
 * With --no-sm (or outside ib mode) sw->sm is NULL and nothing here runs.
 */
#ifndef CNUAS_SM_H
#define CNUAS_SM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sw;
struct jbuf;

/* Defaults and ranges of the command line. */
#define SM_DEFAULT_LID		1
#define SM_DEFAULT_SWEEP_MS	500
#define SM_SWEEP_MS_MIN		50
#define SM_SWEEP_MS_MAX		60000
#define SM_DEFAULT_PREFIX	0xfe80000000000000ull

/* Returns false when the SM's state or timer cannot be set up. */
bool sm_init(struct sw *sw);
void sm_fini(struct sw *sw);
void sm_port_change(struct sw *sw, unsigned int port, bool up);
bool sm_receive(struct sw *sw, unsigned int in, const uint8_t *frame, size_t len);
void sm_timer(struct sw *sw);
/* The `sm` control op's reply fields. */
void sm_report(struct sw *sw, struct jbuf *b);

#endif
