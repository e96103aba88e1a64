/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The subnet-manager seam (InfiniBand mode).
 *
 * Today there is no subnet manager: LIDs and the LFT are set over the control
 * socket.  The native-IB work adds one here, and only here:
 *  - frames addressed to the switch itself (DLID 0xFFFF, the permissive LID,
 *    or a unicast LID whose LFT entry is port 0, the switch's management port)
 *    are handed to sm_receive(); returning false drops them as `no_sm`;
 *  - sm_port_change() reports a device connecting to / leaving a port, which is
 *    when an SM sweeps (SubnGet NodeInfo, SubnSet PortInfo to the port's QP0);
 *  - the SM sends with port_output() and programs routes through sw->lft and
 *    mcast_set(), the same state the control socket edits.
 */
#ifndef CNUAS_SM_H
#define CNUAS_SM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sw;

void sm_init(struct sw *sw);
void sm_port_change(struct sw *sw, unsigned int port, bool up);
bool sm_receive(struct sw *sw, unsigned int in, const uint8_t *frame, size_t len);

#endif
